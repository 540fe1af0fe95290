// @a2a-js/sdk 0.3's client against an A2A server, one scenario per run (A2A 0.3 wire shapes).
//
//   node client.mjs --url BASE --binding JSONRPC|HTTP+JSON --scenario NAME [--token T]
//
// Prints one JSON line per step: {"step", "data"} with data the 0.3 JSON the SDK returned,
// or {"step", "raised": {"type", "message"}} for an error it raised (the scenario goes on when
// it expects one; an unexpected one ends it with exit code 1).
import { randomUUID } from 'node:crypto';
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

function params(text, { taskId, contextId, blocking } = {}) {
  return {
    message: {
      kind: 'message',
      messageId: randomUUID(),
      role: 'user',
      parts: [{ kind: 'text', text }],
      ...(taskId ? { taskId } : {}),
      ...(contextId ? { contextId } : {}),
    },
    ...(blocking === false ? { configuration: { blocking: false } } : {}),
  };
}

async function collect(stream, step) {
  const events = [];
  for await (const event of stream) {
    emit(step, event);
    events.push(event);
  }
  return events;
}

async function main() {
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  if (scenario === 'card') {
    emit('card', await resolver.resolve(url));
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
      emit('reply', await client.sendMessage(params('hello interop')));
      emit('task_reply', await client.sendMessage(params('stream:2')));
      break;
    case 'stream':
      await collect(client.sendMessageStream(params('stream:3')), 'event');
      break;
    case 'get': {
      const sent = await client.sendMessage(params('stream:2'));
      emit('sent', sent);
      emit('got', await client.getTask({ id: sent.id }));
      try {
        await client.getTask({ id: 'no-such-task' });
        emit('unknown', null);
      } catch (err) {
        emitRaised('unknown', err);
      }
      break;
    }
    case 'cancel': {
      const sent = await client.sendMessage(params('hold:30', { blocking: false }));
      emit('sent', sent);
      emit('canceled', await client.cancelTask({ id: sent.id }));
      emit('got', await client.getTask({ id: sent.id }));
      break;
    }
    case 'subscribe': {
      const sent = await client.sendMessage(params('hold:1', { blocking: false }));
      emit('sent', sent);
      await collect(client.resubscribeTask({ id: sent.id }), 'event');
      break;
    }
    case 'input_required': {
      const first = await client.sendMessage(params('ask'));
      emit('asked', first);
      emit('answered', await client.sendMessage(params('Ada', { taskId: first.id, contextId: first.contextId })));
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
