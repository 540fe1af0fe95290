// A small agent on @a2a-js/sdk's server, for our client and CLI to talk to.
//
//   node echo_server.mjs [--port N] [--token T]
//
// Serves JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest on 127.0.0.1, the card at
// /.well-known/agent-card.json, and prints "READY http://127.0.0.1:PORT" once listening.
// With --token, both bindings require "Authorization: Bearer T" (the card stays public).
//
// Skills (by the message text):
//   anything   -> a Message with the same text back (no task)
//   stream:N   -> a task: WORKING, N artifact chunks appended to one artifact, COMPLETED
//                 (stream:N and hold:S count anywhere in the text: a supervisor step carries them)
//   hold:S     -> a task: WORKING for S seconds (cancellable), then COMPLETED
//   ask        -> a task waiting in INPUT_REQUIRED ("What is your name?"); the next message on
//                 that task completes it with "Hello, <text>!"
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AgentCard, Message, Task, TaskState, AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const port = Number(arg('--port', '0'));
const token = arg('--token', undefined);

function agentMessage(text, taskId, contextId) {
  return Message.fromJSON({
    messageId: randomUUID(),
    role: 'ROLE_AGENT',
    parts: [{ text }],
    ...(taskId ? { taskId } : {}),
    ...(contextId ? { contextId } : {}),
  });
}

function textOf(message) {
  return message.parts
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('');
}

function status(taskId, contextId, state, text) {
  return {
    kind: 'statusUpdate',
    data: {
      taskId,
      contextId,
      status: { state, message: text ? agentMessage(text, taskId, contextId) : undefined, timestamp: new Date().toISOString() },
      metadata: undefined,
    },
  };
}

// Tasks being held, by id: cancelTask wakes the sleeper early.
const holds = new Map();

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage).trim();
    if (ctx.task) {
      // A follow-up turn: only the 'ask' task takes one (it waits in INPUT_REQUIRED).
      bus.publish({ kind: 'task', data: ctx.task });
      const greeting = `Hello, ${text}!`;
      bus.publish({
        kind: 'artifactUpdate',
        data: {
          taskId,
          contextId,
          artifact: { artifactId: 'greeting', name: 'greeting', description: '', parts: [{ content: { $case: 'text', value: greeting }, metadata: undefined, filename: '', mediaType: '' }], metadata: undefined, extensions: [] },
          append: false,
          lastChunk: true,
          metadata: undefined,
        },
      });
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, greeting));
      bus.finished();
      return;
    }
    if (!/\b(stream|hold):\d|^ask$/.test(text)) {
      bus.publish({ kind: 'message', data: agentMessage(text, undefined, contextId) });
      bus.finished();
      return;
    }
    const task = Task.fromJSON({
      id: taskId,
      contextId,
      status: { state: 'TASK_STATE_SUBMITTED', timestamp: new Date().toISOString() },
      history: [],
    });
    task.history = [ctx.userMessage];
    bus.publish({ kind: 'task', data: task });
    if (text === 'ask') {
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, 'What is your name?'));
      bus.finished();
      return;
    }
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING));
    const streamed = text.match(/\bstream:(\d+)/);
    if (streamed) {
      const count = Math.min(Number(streamed[1]), 1000);
      for (let i = 0; i < count; i++) {
        bus.publish({
          kind: 'artifactUpdate',
          data: {
            taskId,
            contextId,
            artifact: { artifactId: 'echo-stream', name: 'echo-stream', description: '', parts: [{ content: { $case: 'text', value: `chunk ${i}` }, metadata: undefined, filename: '', mediaType: '' }], metadata: undefined, extensions: [] },
            append: i > 0,
            lastChunk: i === count - 1,
            metadata: undefined,
          },
        });
      }
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
      bus.finished();
      return;
    }
    const seconds = Math.min(Number(text.match(/\bhold:(\d+)/)[1]), 600);
    const canceled = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), seconds * 1000);
      holds.set(taskId, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    holds.delete(taskId);
    bus.publish(
      canceled
        ? status(taskId, contextId, TaskState.TASK_STATE_CANCELED)
        : status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, `held for ${seconds}s`),
    );
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    const wake = holds.get(taskId);
    if (wake) {
      wake(); // execute() publishes CANCELED
    }
  },
};

const app = express();
const server = app.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const card = AgentCard.fromJSON({
    name: 'js-echo',
    description: 'Echo agent on @a2a-js/sdk (interop tests)',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${url}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'echo, stream:N, hold:S, ask', tags: ['echo'] }],
    ...(token
      ? {
          securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
          securityRequirements: [{ schemes: { bearer: { list: [] } } }],
        }
      : {}),
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const auth = (req, res, next) => {
    if (!token || req.headers.authorization === `Bearer ${token}`) return next();
    res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'unauthenticated' });
  };
  // The handler sends JSON.stringify of what the provider gives: give it the ProtoJSON form
  // (the SDK's own objects would put '$case' oneofs, e.g. of securitySchemes, on the wire).
  const wireCard = AgentCard.toJSON(card);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: () => Promise.resolve(wireCard) }));
  app.use('/a2a/jsonrpc', auth, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/a2a/rest', auth, restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`READY ${url}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
