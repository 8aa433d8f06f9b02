/**
 * The moving parts of {@link faultProxy}: one {@link ProxiedConnection} per client, each with a
 * {@link Lane} per direction, a FIFO of chunks and closes. Internal to `bulwark/testing`; it uses
 * Node's sockets (through types only: `fault-proxy.ts` loads `node:net`) and real timers.
 */
import type { Socket } from 'node:net';
import { systemClock, type TimerHandle } from '../core/clock.js';

/** Bytes queued in one direction above which reading from its source pauses. */
const HIGH_WATER_BYTES = 1 << 20;

/** What a direction's faults are now: shared by every connection's lane in that direction. */
export interface LaneState {
  latencyMs: number;
  paused: boolean;
}

type Item =
  | { readonly at: number; readonly kind: 'data'; readonly chunk: Buffer }
  | { readonly at: number; readonly kind: 'end' | 'destroy' };

/**
 * One direction of one connection: a FIFO of chunks and closes from `from` to `to`. A chunk is
 * forwarded no earlier than the latency after it arrived, and a close only after the data before it.
 */
export class Lane {
  #queue: Item[] = [];
  #bytes = 0;
  #timer: TimerHandle | undefined;
  #waitingDrain = false;
  #stopped = false;

  constructor(
    readonly from: Socket,
    readonly to: Socket,
    readonly state: LaneState,
  ) {}

  push(kind: 'end' | 'destroy'): void;
  push(kind: 'data', chunk: Buffer): void;
  push(kind: Item['kind'], chunk?: Buffer): void {
    if (this.#stopped) return;
    const at = systemClock.now() + this.state.latencyMs;
    if (kind === 'data' && chunk !== undefined) {
      this.#queue.push({ at, kind, chunk });
      this.#bytes += chunk.length;
      if (this.#bytes > HIGH_WATER_BYTES && !this.from.isPaused()) this.from.pause();
    } else if (kind !== 'data') {
      this.#queue.push({ at, kind });
    }
    this.pump();
  }

  /** Forwards what is due, in order, until the queue is empty, paused, not yet due or `to` is full. */
  pump(): void {
    if (this.#stopped || this.#timer !== undefined || this.#waitingDrain) return;
    while (this.#queue.length > 0) {
      if (this.state.paused) return;
      const head = this.#queue[0]!;
      const wait = head.at - systemClock.now();
      if (wait > 0) {
        this.#timer = systemClock.setTimer(() => {
          this.#timer = undefined;
          this.pump();
        }, Math.ceil(wait));
        return;
      }
      this.#queue.shift();
      if (head.kind === 'data') {
        if (!this.#forward(head.chunk)) return;
      } else if (head.kind === 'end') {
        if (!this.to.destroyed && !this.to.writableEnded) this.to.end();
      } else if (this.to.writableLength > 0 && !this.to.destroyed) {
        // Deliver what is already written before closing, as the kernel would.
        if (!this.to.writableEnded) this.to.end();
        this.to.once('finish', () => this.to.destroy());
      } else {
        this.to.destroy();
      }
    }
  }

  /** Writes one chunk to `to`; false when `to` is full and the lane waits for it to drain. */
  #forward(chunk: Buffer): boolean {
    this.#bytes -= chunk.length;
    if (this.#bytes <= HIGH_WATER_BYTES / 2 && this.from.isPaused() && !this.from.destroyed)
      this.from.resume();
    if (this.to.destroyed || this.to.writableEnded || this.to.write(chunk)) return true;
    this.#waitingDrain = true;
    this.to.once('drain', () => {
      this.#waitingDrain = false;
      this.pump();
    });
    return false;
  }

  /** Drops everything held and forwards nothing more. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) systemClock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
    this.#bytes = 0;
  }
}

/** Closes a socket, with a TCP RST when `reset` (the peer sees `ECONNRESET`) and it can. */
export function destroySocket(socket: Socket, reset: boolean): void {
  if (reset && !socket.destroyed && !socket.connecting) {
    try {
      socket.resetAndDestroy();
      return;
    } catch {
      // Not resettable in this state: fall back to a plain destroy.
    }
  }
  socket.destroy();
}

/** Which way a fault applies: `upstream` is client → server, `downstream` server → client. */
export type ProxyDirection = 'both' | 'upstream' | 'downstream';

/** A client socket and its server socket, joined by one lane each way. */
export class ProxiedConnection {
  readonly upstream: Lane;
  readonly downstream: Lane;
  #open = 2;

  constructor(
    readonly client: Socket,
    readonly server: Socket,
    states: { readonly upstream: LaneState; readonly downstream: LaneState },
    onClosed: (connection: ProxiedConnection) => void,
  ) {
    this.upstream = new Lane(client, server, states.upstream);
    this.downstream = new Lane(server, client, states.downstream);
    const wire = (socket: Socket, lane: Lane): void => {
      socket.setNoDelay(true);
      socket.on('data', (chunk: Buffer) => lane.push('data', chunk));
      socket.on('end', () => lane.push('end'));
      // Errors are forwarded as a close (below); without a listener they would crash the process.
      socket.on('error', () => {});
      socket.on('close', () => {
        lane.push('destroy');
        this.#open -= 1;
        if (this.#open === 0) {
          this.upstream.stop();
          this.downstream.stop();
          onClosed(this);
        }
      });
    };
    wire(client, this.upstream);
    wire(server, this.downstream);
  }

  /** The lanes `direction` names. */
  lanes(direction: ProxyDirection): Lane[] {
    if (direction === 'upstream') return [this.upstream];
    if (direction === 'downstream') return [this.downstream];
    return [this.upstream, this.downstream];
  }

  /** Destroys both sockets at once, dropping anything held. */
  destroy(reset: boolean): void {
    this.upstream.stop();
    this.downstream.stop();
    destroySocket(this.client, reset);
    destroySocket(this.server, reset);
  }
}
