/** Serving the lab's HTTP servers on loopback: a free port, keep-alive, and a close that ends every connection. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A server listening on 127.0.0.1: its base URL and how to stop it. */
export interface Listening {
  readonly url: string;
  /** Stops accepting, drops open connections, resolves once closed. */
  close(): Promise<void>;
}

/**
 * Starts `server` on a free port of 127.0.0.1 (keep-alive connections held 30 s).
 *
 * @example
 * const { url, close } = await listenOnLoopback(createServer(handler));
 */
export async function listenOnLoopback(server: Server): Promise<Listening> {
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
