// @a2a-js/sdk's client against an A2A server, one scenario per run.
//
//   node client.mjs --url BASE --binding JSONRPC|HTTP+JSON --scenario NAME [--token T]
//
// Prints one JSON line per step: {"step", "data"} with data the ProtoJSON of what the SDK
// parsed, or {"step", "raised": {"type", "message"}} for an error the SDK raised (the
// scenario goes on when it expects one; an unexpected one ends it with exit code 1).
import { randomUUID } from 'node:crypto';
import { AgentCard, ListTasksResponse, Message, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const url = arg('--url');
const binding = arg('--binding', 'JSONRPC');
const scenario = arg('--scenario');
const token = arg('--token', undefined);

function emit(step, data) {
  process.stdout.write(JSON.stringify({ step, data }) + '\n');
}

function emitRaised(step, err) {
  process.stdout.write(JSON.stringify({ step, raised: { type: err?.constructor?.name ?? 'Error', message: String(err?.message ?? err) } }) + '\n');
}

// Every request (the card's too) carries the token when one is given.
const fetchImpl = token
  ? (input, init = {}) => {
      const headers = new Headers(init.headers ?? {});
      headers.set('Authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    }
  : fetch;

function request(text, { taskId, contextId, returnImmediately } = {}) {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(taskId ? { taskId } : {}),
      ...(contextId ? { contextId } : {}),
    },
    ...(returnImmediately ? { configuration: { returnImmediately: true } } : {}),
  });
}

function reply(result) {
  // SendMessageResult is a Message or a Task: tell them apart the way the proto's oneof does.
  return 'messageId' in result ? { message: Message.toJSON(result) } : { task: Task.toJSON(result) };
}

async function collect(stream, step) {
  const events = [];
  for await (const event of stream) {
    const json = StreamResponse.toJSON(event);
    emit(step, json);
    events.push(json);
  }
  return events;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  if (scenario === 'card') {
    emit('card', AgentCard.toJSON(await resolver.resolve(url)));
    return;
  }
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [binding],
    cardResolver: resolver,
  });
  const client = await factory.createFromUrl(url);
  switch (scenario) {
    case 'send':
      emit('reply', reply(await client.sendMessage(request('hello interop'))));
      emit('task_reply', reply(await client.sendMessage(request('stream:2'))));
      break;
    case 'stream':
      await collect(client.sendMessageStream(request('stream:3')), 'event');
      break;
    case 'get': {
      const sent = await client.sendMessage(request('stream:2'));
      emit('sent', reply(sent));
      emit('got', Task.toJSON(await client.getTask({ tenant: '', id: sent.id, historyLength: undefined })));
      try {
        await client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined });
        emit('unknown', null);
      } catch (err) {
        emitRaised('unknown', err);
      }
      break;
    }
    case 'list': {
      const contextId = randomUUID();
      for (const text of ['stream:1', 'stream:2']) {
        emit('sent', reply(await client.sendMessage(request(text, { contextId }))));
      }
      const page = await client.listTasks({ tenant: '', contextId, pageSize: 1, pageToken: '', status: 0, historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
      emit('page1', ListTasksResponse.toJSON(page));
      const rest = await client.listTasks({ tenant: '', contextId, pageSize: 10, pageToken: page.nextPageToken, status: 0, historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
      emit('page2', ListTasksResponse.toJSON(rest));
      break;
    }
    case 'cancel': {
      const sent = await client.sendMessage(request('hold:30', { returnImmediately: true }));
      emit('sent', reply(sent));
      emit('canceled', Task.toJSON(await client.cancelTask({ tenant: '', id: sent.id, metadata: undefined })));
      emit('got', Task.toJSON(await client.getTask({ tenant: '', id: sent.id, historyLength: undefined })));
      break;
    }
    case 'subscribe': {
      const sent = await client.sendMessage(request('hold:1', { returnImmediately: true }));
      emit('sent', reply(sent));
      await collect(client.resubscribeTask({ tenant: '', id: sent.id }), 'event');
      break;
    }
    case 'input_required': {
      const first = await client.sendMessage(request('ask'));
      emit('asked', reply(first));
      const answer = await client.sendMessage(request('Ada', { taskId: first.id, contextId: first.contextId }));
      emit('answered', reply(answer));
      break;
    }
    case 'input_required_stream': {
      const events = await collect(client.sendMessageStream(request('ask')), 'asked');
      const task = events.find((e) => e.task)?.task ?? {};
      const taskId = task.id ?? events.find((e) => e.statusUpdate)?.statusUpdate.taskId;
      const contextId = task.contextId ?? events.find((e) => e.statusUpdate)?.statusUpdate.contextId;
      await collect(client.sendMessageStream(request('Ada', { taskId, contextId })), 'answered');
      break;
    }
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    emitRaised('error', err);
    process.exit(1);
  },
);
