import { once } from 'node:events';
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FaultProxy, faultProxy } from './fault-proxy.js';

/** A real TCP echo server on an ephemeral port, closed (with its sockets) after each test. */
async function startEchoServer(): Promise<{
  port: number;
  sockets: Set<net.Socket>;
  close(): Promise<void>;
}> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    sockets,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function connect(port: number): Promise<net.Socket> {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  await once(socket, 'connect');
  return socket;
}

/** Resolves with everything `socket` receives until it ends or closes. */
function collect(socket: net.Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  return new Promise((resolve) => socket.once('close', () => resolve(text)));
}

/** Resolves when `socket` closes, whether or not with an error (unlike `once(socket, 'close')`). */
function closed(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

async function receive(socket: net.Socket, expected: string): Promise<string> {
  let text = '';
  for await (const chunk of socket) {
    text += String(chunk);
    if (text.length >= expected.length) break;
  }
  return text;
}

describe('fault proxy (against a local TCP echo server)', () => {
  let echo: Awaited<ReturnType<typeof startEchoServer>>;
  let proxy: FaultProxy;

  beforeEach(async () => {
    echo = await startEchoServer();
    proxy = await faultProxy({ target: { host: '127.0.0.1', port: echo.port } });
  });
  afterEach(async () => {
    await proxy.close();
    await echo.close();
  });

  it('listens on 127.0.0.1 on an ephemeral port and rewrites URLs to itself', () => {
    expect(proxy.host).toBe('127.0.0.1');
    expect(proxy.port).toBeGreaterThan(0);
    expect(proxy.url('redis://user:secret@127.0.0.1:6379/2')).toBe(
      `redis://user:secret@127.0.0.1:${proxy.port}/2`,
    );
    expect(proxy.url('postgres://postgres@db.internal:5432/test?sslmode=disable')).toBe(
      `postgres://postgres@127.0.0.1:${proxy.port}/test?sslmode=disable`,
    );
  });

  it('keeps byte order when latency changes between chunks, and across pause/resume', async () => {
    const socket = await connect(proxy.port);
    const received = receive(socket, 'abcdef');
    proxy.setLatency(80);
    socket.write('a');
    await new Promise((resolve) => setTimeout(resolve, 5));
    proxy.setLatency(0);
    socket.write('b');
    proxy.pause('upstream');
    socket.write('c');
    proxy.setLatency(30, 'downstream');
    socket.write('d');
    proxy.resume('upstream');
    socket.write('ef');
    expect(await received).toBe('abcdef');
    socket.destroy();
  });

  it('delivers held data before a close that followed it', async () => {
    const socket = await connect(proxy.port);
    const received = collect(socket);
    proxy.setLatency(50, 'downstream');
    socket.end('bye');
    expect(await received).toBe('bye');
  });

  it('cut destroys every connection on both sides and still accepts new ones', async () => {
    const first = await connect(proxy.port);
    const second = await connect(proxy.port);
    await expect.poll(() => echo.sockets.size).toBe(2);
    expect(proxy.connections).toBe(2);
    const bothClosed = Promise.all([closed(first), closed(second)]);
    proxy.cut();
    await bothClosed;
    await expect.poll(() => echo.sockets.size).toBe(0);

    const third = await connect(proxy.port);
    third.write('again');
    expect(await receive(third, 'again')).toBe('again');
    expect(proxy.accepted).toBe(3);
    third.destroy();
  });

  it('refuse resets new connections without touching open ones', async () => {
    const open = await connect(proxy.port);
    proxy.refuse(true);
    const refused = net.connect({ host: '127.0.0.1', port: proxy.port });
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNRESET');
    open.write('still here');
    expect(await receive(open, 'still here')).toBe('still here');
    expect(proxy.accepted).toBe(1);
    open.destroy();
  });

  it('close destroys every connection, including held ones, and stops listening', async () => {
    const socket = await connect(proxy.port);
    proxy.pause();
    socket.write('held');
    const socketClosed = closed(socket);
    await proxy.close();
    await socketClosed;
    expect(proxy.connections).toBe(0);
    await expect.poll(() => echo.sockets.size).toBe(0);
    const late = net.connect({ host: '127.0.0.1', port: proxy.port });
    const [error] = (await once(late, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });

  it('starts with the latency of its options, in both directions', async () => {
    const slow = await faultProxy({ target: { host: '127.0.0.1', port: echo.port }, latencyMs: 20 });
    try {
      const socket = await connect(slow.port);
      socket.write('late');
      expect(await receive(socket, 'late')).toBe('late');
      socket.destroy();
    } finally {
      await slow.close();
    }
  });

  it('rejects invalid options with a TypeError naming the option, and bad arguments', async () => {
    await expect(faultProxy({ target: { host: '127.0.0.1', port: 0 } })).rejects.toThrow(
      'expected "target" to be { host, port } (a port from 1 to 65535), got {"host":"127.0.0.1","port":0}',
    );
    await expect(faultProxy(undefined as never)).rejects.toThrow(TypeError);
    await expect(
      faultProxy({ target: { host: '127.0.0.1', port: echo.port }, latency: 5 } as never),
    ).rejects.toThrow('unknown option "latency" in faultProxy options; did you mean "latencyMs"?');
    await expect(
      faultProxy({ target: { host: '127.0.0.1', port: echo.port }, latencyMs: -1 }),
    ).rejects.toThrow(/"latencyMs"/);
    await expect(faultProxy({ target: { host: '127.0.0.1', port: echo.port }, host: '' })).rejects.toThrow(
      /"host"/,
    );
    expect(() => proxy.setLatency(-1)).toThrow(/latencyMs/);
    expect(() => proxy.pause('sideways' as never)).toThrow(/direction/);
  });
});
