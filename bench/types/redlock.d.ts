/**
 * The part of node-redlock v5 (beta) the lock benchmark uses: its package's `exports` map names no
 * types for ESM, so TypeScript cannot find the declarations it ships.
 */
declare module 'redlock' {
  import type { Redis } from 'ioredis';

  interface Lock {
    release(): Promise<unknown>;
  }
  interface Settings {
    readonly retryCount?: number;
    readonly automaticExtensionThreshold?: number;
  }
  export default class Redlock {
    constructor(clients: Iterable<Redis>, settings?: Settings);
    acquire(resources: string[], duration: number, settings?: Settings): Promise<Lock>;
  }
}
