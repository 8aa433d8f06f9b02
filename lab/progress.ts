/**
 * The progress bar of a lab run (cli-progress): build, phase, elapsed seconds and requests per
 * second, redrawn a few times a second. Quiet when stdout is not a terminal.
 */
import cliProgress from 'cli-progress';
import type { LoadRecorder } from './load/stats.js';
import type { Timeline } from './timeline.js';

/** What the runner tells the display. */
export interface Progress {
  /** A build's load started: follow `recorder` along `timeline`. */
  load(build: string, recorder: LoadRecorder, timeline: Timeline): void;
  /** The load is over; the build's events are being drained. */
  settle(build: string): void;
  stop(): void;
}

const quiet: Progress = { load() {}, settle() {}, stop() {} };

/**
 * A progress bar on stdout, or a display that prints nothing when `enabled` is false.
 *
 * @example
 * const progress = progressBar(process.stdout.isTTY === true);
 */
export function progressBar(enabled: boolean): Progress {
  if (!enabled) return quiet;
  const bar = new cliProgress.SingleBar(
    {
      format: ' {build} |{bar}| {phase} | {elapsed}s | {rps} req/s',
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let timer: NodeJS.Timeout | undefined;
  const stopTimer = () => {
    clearInterval(timer);
    timer = undefined;
  };
  return {
    load(build, recorder, timeline) {
      stopTimer();
      // Requests per second over the last second, from samples taken at each redraw.
      const samples: Array<readonly [atMs: number, requests: number]> = [[timeline.elapsedMs(), 0]];
      let rps = 0;
      const payload = () => ({
        build: build.padEnd(7),
        phase: timeline.phase().padEnd(14),
        elapsed: (timeline.elapsedMs() / 1_000).toFixed(1).padStart(5),
        rps: String(rps).padStart(5),
      });
      bar.start(timeline.durationMs, 0, payload());
      timer = setInterval(() => {
        const now = timeline.elapsedMs();
        samples.push([now, recorder.requests]);
        while (samples.length > 2 && now - samples[1]![0] >= 1_000) samples.shift();
        const [since, count] = samples[0]!;
        rps = now > since ? Math.round(((recorder.requests - count) * 1_000) / (now - since)) : 0;
        bar.update(Math.min(now, timeline.durationMs), payload());
      }, 200);
    },
    settle(build) {
      stopTimer();
      bar.update(bar.getTotal(), { build: build.padEnd(7), phase: 'draining'.padEnd(14) });
      bar.stop();
    },
    stop() {
      stopTimer();
      bar.stop();
    },
  };
}
