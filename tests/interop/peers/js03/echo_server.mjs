// A small agent on @a2a-js/sdk 0.3's server (A2A 0.3 wire shapes), for our client and CLI.
//
//   node echo_server.mjs [--port N] [--token T]
//
// Serves JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest on 127.0.0.1, the 0.3 card at
// /.well-known/agent-card.json, and prints "READY http://127.0.0.1:PORT" once listening.
// With --token, both bindings require "Authorization: Bearer T" (the card stays public and
// declares the scheme the 0.3 way: securitySchemes by type, security).
//
// Skills (by the message text):
//   anything   -> a Message with the same text back (no task)
//   stream:N   -> a task: working, N artifact chunks appended to one artifact, completed
//   hold:S     -> a task: working for S seconds (cancellable), then completed
//   ask        -> a task waiting in input-required ("What is your name?"); the next message on
//                 that task completes it with "Hello, <text>!"
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const port = Number(arg('--port', '0'));
const token = arg('--token', undefined);

function agentMessage(text, taskId, contextId) {
  return {
    kind: 'message',
    messageId: randomUUID(),
    role: 'agent',
    parts: [{ kind: 'text', text }],
    ...(taskId ? { taskId } : {}),
    ...(contextId ? { contextId } : {}),
  };
}

function textOf(message) {
  return message.parts
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('');
}

function status(taskId, contextId, state, final, text) {
  return {
    kind: 'status-update',
    taskId,
    contextId,
    status: { state, ...(text ? { message: agentMessage(text, taskId, contextId) } : {}), timestamp: new Date().toISOString() },
    final,
  };
}

// Tasks being held, by id: cancelTask wakes the sleeper early.
const holds = new Map();

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage).trim();
    if (ctx.task) {
      // A follow-up turn: only the 'ask' task takes one (it waits in input-required). The
      // task is published first so that the SDK's result manager applies what follows to it.
      bus.publish({ ...ctx.task, kind: 'task' });
      const greeting = `Hello, ${text}!`;
      bus.publish({
        kind: 'artifact-update',
        taskId,
        contextId,
        artifact: { artifactId: 'greeting', name: 'greeting', parts: [{ kind: 'text', text: greeting }] },
        lastChunk: true,
      });
      bus.publish(status(taskId, contextId, 'completed', true, greeting));
      bus.finished();
      return;
    }
    if (!/\b(stream|hold):\d|^ask$/.test(text)) {
      bus.publish(agentMessage(text, undefined, contextId));
      bus.finished();
      return;
    }
    bus.publish({
      kind: 'task',
      id: taskId,
      contextId,
      status: { state: 'submitted', timestamp: new Date().toISOString() },
      history: [ctx.userMessage],
    });
    if (text === 'ask') {
      bus.publish(status(taskId, contextId, 'input-required', true, 'What is your name?'));
      bus.finished();
      return;
    }
    bus.publish(status(taskId, contextId, 'working', false));
    const streamed = text.match(/\bstream:(\d+)/);
    if (streamed) {
      const count = Math.min(Number(streamed[1]), 1000);
      for (let i = 0; i < count; i++) {
        bus.publish({
          kind: 'artifact-update',
          taskId,
          contextId,
          artifact: { artifactId: 'echo-stream', name: 'echo-stream', parts: [{ kind: 'text', text: `chunk ${i}` }] },
          append: i > 0,
          lastChunk: i === count - 1,
        });
      }
      bus.publish(status(taskId, contextId, 'completed', true));
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
        ? status(taskId, contextId, 'canceled', true)
        : status(taskId, contextId, 'completed', true, `held for ${seconds}s`),
    );
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    const wake = holds.get(taskId);
    if (wake) {
      wake(); // execute() publishes canceled
    }
  },
};

const app = express();
const server = app.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'js03-echo',
    description: 'Echo agent on @a2a-js/sdk 0.3 (interop tests)',
    version: '1.0.0',
    protocolVersion: '0.3.0',
    url: `${url}/a2a/jsonrpc`,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [
      { url: `${url}/a2a/jsonrpc`, transport: 'JSONRPC' },
      { url: `${url}/a2a/rest`, transport: 'HTTP+JSON' },
    ],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'echo, stream:N, hold:S, ask', tags: ['echo'] }],
    ...(token ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, security: [{ bearer: [] }] } : {}),
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  const auth = (req, res, next) => {
    if (!token || req.headers.authorization === `Bearer ${token}`) return next();
    res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'unauthenticated' });
  };
  app.use('/a2a/jsonrpc', auth, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/a2a/rest', auth, restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`READY ${url}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
