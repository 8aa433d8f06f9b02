/**
 * The saga log contract: where a durable saga records each run (its input, each step's state and
 * output) before and after each step happens, so that `recover()` in any process can finish what a
 * crashed process left mid-flight. One interface for every backend: the in-memory log
 * (`memorySagaLog`, in this folder) is the reference; `postgresStores(db).sagaLog` shares runs
 * between processes. Both pass `sagaLogConformance` from `bulwark/testing`.
 *
 * - **Runs and leases.** A run is named by its saga's `name` and its `id` (unique per name). The
 *   process that runs it holds a lease: only the lease's `owner` may write to the run. A lease
 *   lasts `leaseMs` from each accepted `start`, `write` or `renew` (on the store's clock). A run
 *   whose lease ended and that is not finished can be taken by `claim`, which makes the claimant
 *   its owner: from then on the former owner's writes are refused (`false`), so a stalled process
 *   that comes back never writes over its successor.
 * - **Atomicity.** Each call is one atomic step. Of any number of concurrent `claim`s, from any
 *   process, each claimable run goes to exactly one. `start` of an id already in the log (running,
 *   or finished and still retained) is refused, so a run id is never run twice while it is kept.
 * - **Finished runs.** A `status` change to `completed`, `compensated` or `attention` finishes the
 *   run: it has no owner any more, and every later write or renewal is refused. Completed and
 *   compensated runs are kept at least {@link SAGA_RETENTION_MS} (their ids stay taken), then
 *   deleted; runs that need attention are kept until someone deletes them.
 * - **Whose clock.** The store's (the memory log's `clock`, PostgreSQL `clock_timestamp()`): a
 *   lease ends on it. A holder measures its lease on its own clock from the moment it sent the
 *   call (see `LeaseKeeper`), never from the store's.
 * - **Values.** Names, ids, owners and step names are non-empty strings of well-formed UTF-16
 *   without U+0000 (a `TypeError` otherwise); `leaseMs` is a positive safe integer; a step's
 *   `position` a non-negative integer below 2^31; inputs and outputs are JSON text, stored and
 *   returned as given.
 * - **Failure.** A store that cannot decide rejects (a remote store with `StoreUnavailableError`,
 *   within its deadline `timeoutMs`); it never reports a failure as a refusal. A call that missed
 *   its deadline may still have happened.
 */

/**
 * How long a completed or compensated run is kept in the log before it is deleted, in ms (24 h):
 * while it is kept, its id cannot be started again.
 */
export const SAGA_RETENTION_MS = 86_400_000;

/**
 * Where a run stands: `running` (steps going forward), `compensating` (undoing), or finished:
 * `completed`, `compensated`, or `attention` (recovery could not settle it: a step whose outcome
 * is unknown, or a step the saga no longer defines).
 */
export type SagaStatus = 'running' | 'compensating' | 'completed' | 'compensated' | 'attention';

/**
 * Where a step stands: `running` (recorded before it ran: after a crash its outcome is unknown),
 * `done` (with its output), `failed` (a mandatory step: not compensated), `skipped` (an optional
 * step that failed), `compensating` (recorded before its compensation ran), `compensated`.
 */
export type StepState = 'running' | 'done' | 'failed' | 'skipped' | 'compensating' | 'compensated';

/** One run, and the lease its holder writes under. Built once per run and passed to each call. */
export interface SagaLease {
  /** The saga's name (`saga({ name })`). */
  readonly name: string;
  /** The run's id, unique per name. */
  readonly id: string;
  /** Who holds the run (one per runner or recovery). */
  readonly owner: string;
  /** How long each accepted call extends the lease, in ms. */
  readonly leaseMs: number;
}

/** A step's new state: `position` orders the steps (0 for the first); `output` is set with `done`. */
export interface StepChange {
  readonly step: string;
  readonly position: number;
  readonly state: StepState;
  /** The step's output as JSON text; absent to keep the one recorded (or none). */
  readonly output?: string | undefined;
}

/** The run's new status (a run starts `running`, so it cannot be written). */
export interface StatusChange {
  readonly status: Exclude<SagaStatus, 'running'>;
}

/** One change to a run: a step's state, or the run's status. */
export type SagaChange = StepChange | StatusChange;

/** One step of a claimed run, as last written. */
export interface LoggedStep {
  readonly step: string;
  readonly position: number;
  readonly state: StepState;
  /** The output JSON text, if one was recorded. */
  readonly output: string | undefined;
}

/** A run `claim` took: what recovery needs to finish it. */
export interface ClaimedRun {
  readonly id: string;
  /** The input as JSON text, as `start` got it. */
  readonly input: string;
  readonly status: 'running' | 'compensating';
  /** Every step written, ordered by `position`. */
  readonly steps: readonly LoggedStep[];
}

/** Where saga runs are recorded (see the module doc for the contract). */
export interface SagaLog {
  /**
   * The store's deadline for one call, in ms (0 for a store that never waits, like memory): a
   * saga's `leaseMs` must be at least 3 × this, so that a renewal can be confirmed in time.
   */
  readonly timeoutMs: number;
  /**
   * Records a new run with its `input` (JSON text), status `running`, held by `lease.owner` for
   * `lease.leaseMs`. Resolves false, changing nothing, when the log already holds that id for
   * that name.
   */
  start(lease: SagaLease, input: string): Promise<boolean>;
  /**
   * Applies `change` and extends the lease, if `lease.owner` holds the unfinished run (its lease
   * may have ended, as long as nobody claimed the run). A step change records the step (inserted
   * the first time) with its state, and its output when given. Resolves false, changing nothing,
   * when the owner does not hold the run (claimed by another, finished, or unknown).
   */
  write(lease: SagaLease, change: SagaChange): Promise<boolean>;
  /** Extends the lease, on the same terms as `write`; resolves false when the owner does not hold the run. */
  renew(lease: SagaLease): Promise<boolean>;
  /**
   * Takes one unfinished run of saga `name` whose lease has ended (the one whose lease ended
   * first), for `owner` for `leaseMs`, and resolves it with its steps; `undefined` when there is
   * none. Atomic: concurrent claims never take the same run.
   */
  claim(name: string, owner: string, leaseMs: number): Promise<ClaimedRun | undefined>;
}
