/**
 * The collectives context (seed: "context": the resources collectives run with): one UCX worker,
 * the channel to every process, the plan pool, the configuration, the topology, and the world
 * group (every process, group id 0). `UcgContext.create()` reads the rte, bootstraps, and
 * returns when every process can reach every other; it is collective over the world.
 *
 * Progress: "blocking" by default (UCX_TS_UCG_PROGRESS or `progressMode` choose another):
 * nothing progresses the worker but the collectives themselves. A waiting step polls and
 * `sched_yield()`s its core after an empty poll, as Open MPI's ranks do, so on an oversubscribed
 * host (8 ranks on 2 cores) a waiting rank hands its core on yet sees a message on its next
 * turn, without a wake-up; once `UCX_TS_UCG_STEP_SPIN_US` has passed without an event it sleeps
 * in ucp_worker_wait, so a rank whose peers are away holds no core ("polling" never sleeps).
 * Between collectives the worker is not progressed at all (as MPI's); the bootstrap and
 * `close()` drive it through `worker.settled()`, and so must any point-to-point use of
 * `ctx.worker`. "hybrid" was the default until 2026-11-26: the engine's driver spins, then parks
 * on UCX's event fd behind a watcher thread, and a late message costs two wake-ups (4 ranks on 2
 * cores, alternated pairs under load: 8 B allreduce 1.8-7.9 ms against 0.2-3.6 in blocking
 * mode, faster in 3 of 4 pairs; docs/benchmarks.md).
 */
import process from "node:process";
import { cpus } from "node:os";
import { UcxError } from "../core/errors.ts";
import { Worker, type WorkerOptions } from "../core/worker.ts";
import type { ErrorHandling } from "../core/endpoint.ts";
import type { ProgressMode } from "../core/engine/engine.ts";
import { bootstrap, thisHost } from "./bootstrap.ts";
import { bootstrapAuth } from "./bootstrap-secret.ts";
import { contextSettings } from "./context-env.ts";
import type { HelloAuthOptions } from "../core/hello/auth.ts";
import { Channel } from "./channel.ts";
import { ConfigRegistry, type ResolvedConfig } from "./config.ts";
import { Group } from "./group.ts";
import { PLAN_CONFIG_TABLES, PlanPool } from "./ppool.ts";
import { detectRte, type Rte } from "./rte.ts";
import { Topology } from "./topology.ts";
import { STEP_SPIN_CONFIG } from "./step-spin.ts";

export interface UcgContextOptions {
  /** Rank, size and root address; default from the environment (rte.ts). */
  readonly rte?: Rte;
  /**
   * Default UCX_TS_UCG_PROGRESS, else "blocking": collectives poll and yield the core, then sleep
   * in ucp_worker_wait; "polling": poll and yield, never sleep; "hybrid": the engine's own driver
   * (spins, then parks on UCX's event fd through a watcher thread).
   */
  readonly progressMode?: ProgressMode;
  /**
   * Default "peer": a process that dies makes the others' collectives reject. "none": no
   * watching at all, nobody notices a death (use timeouts).
   */
  readonly errorHandling?: ErrorHandling;
  /**
   * With "peer": the messages to a process on this host go over shared memory (an endpoint
   * without error handling), a tcp endpoint with "peer" beside it watching for the process's
   * death (bootstrap.ts). Default UCX_TS_UCG_SHM, else true; false: tcp for everything.
   */
  readonly sharedMemory?: boolean;
  /** Collectives configuration by full variable name (`{ UCX_TS_KN_RADIX: 2, UCX_TS_ALLREDUCE_PLAN: "1" }`), over the environment's. */
  readonly config?: Readonly<Record<string, string | number>>;
  /**
   * The bootstrap's shared secret: only processes that hold it join (bootstrap-secret.ts). Default
   * from UCX_TS_BOOTSTRAP_SECRET_FILE or UCX_TS_BOOTSTRAP_SECRET (`ucx-ts run` sets a fresh one);
   * without any, the bootstrap is open to whoever reaches rank 0's port first.
   */
  readonly auth?: HelloAuthOptions;
  /** How long the bootstrap may take (default 30 s, UCX_TS_BOOTSTRAP_TIMEOUT in ms). */
  readonly bootstrapTimeoutMs?: number;
  /** More options for the worker (its UCX config, spin budgets). */
  readonly worker?: Omit<WorkerOptions, "progressMode" | "errorHandling">;
}

/** Every config table of the collectives (the context's and each algorithm's); duplicates are refused here. */
export function configRegistry(): ConfigRegistry {
  const registry = new ConfigRegistry();
  for (const t of PLAN_CONFIG_TABLES) registry.add(t);
  registry.add(STEP_SPIN_CONFIG);
  return registry;
}

export class UcgContext {
  /** The world group: every process, ranks = world ranks. */
  readonly world: Group;
  /** @internal Next group id this process has not seen used (group.ts subgroup). */
  nextGroupId = 1;
  #closed = false;
  private readonly groups = new Set<Group>();

  private constructor(
    readonly rte: Rte,
    readonly worker: Worker,
    readonly channel: Channel,
    readonly topology: Topology,
    readonly config: ResolvedConfig,
    readonly ppool: PlanPool,
  ) {
    this.world = this.addGroup(0, Array.from({ length: rte.size }, (_, r) => r));
    channel.onMemberFailure = (handle, error) => {
      if (this.#closed) return;
      const failure = new UcxError(error.code, `process ${handle} failed: ${error.message}`, { status: error.status, statusText: error.statusText, cause: error });
      for (const g of this.groups) if (g.members.includes(handle)) g.fail(failure);
    };
  }

  static async create(options: UcgContextOptions = {}): Promise<UcgContext> {
    const rte = options.rte ?? detectRte(process.env);
    const config = configRegistry().resolve(process.env, options.config ?? {});
    const ppool = new PlanPool(config);
    const settings = contextSettings(process.env, { bootstrapTimeoutMs: options.bootstrapTimeoutMs, progressMode: options.progressMode, sharedMemory: options.sharedMemory });
    const timeoutMs = settings.bootstrapTimeoutMs;
    const auth = bootstrapAuth(process.env, options.auth);
    const progressMode = settings.progressMode;
    const errorHandling = options.errorHandling ?? "peer";
    const worker = await Worker.create({ ...options.worker, progressMode, errorHandling });
    const sharedMemory = settings.sharedMemory;
    const channel = new Channel(worker, rte.rank);
    try {
      // The watching endpoints (bootstrap.ts) on a worker of their own, tcp only, in polling and
      // blocking modes: on the collectives' worker, a tcp endpoint made every ucp_worker_progress
      // of a waiting step an epoll_wait system call (2 ranks, 8 B: a round trip polled back to
      // back 9.0 us against 3.8 without it, 2026-11-27). The waiting steps progress it only now
      // and then (step-spin.ts pollWhile), enough to see a member's death.
      if (channel.drivesSteps && errorHandling === "peer" && sharedMemory && rte.size > 1) {
        channel.watchWorker = await Worker.create({ progressMode: "blocking", errorHandling: "peer", features: ["tag"], config: { TLS: "tcp" } });
      }
      const { hosts } = await worker.settled(bootstrap(worker, channel, rte, { timeoutMs, host: thisHost(), auth, sharedMemory, watch: channel.watchWorker }));
      // A waiting step polls and yields (step-spin.ts): always in polling and blocking modes (only
      // the steps progress the worker there), in hybrid mode where this host has more ranks than cores.
      const oversubscribed = hosts.filter((h) => h === hosts[rte.rank]).length > cpus().length;
      const steps = config.table(STEP_SPIN_CONFIG.name);
      if (channel.drivesSteps) {
        channel.stepSpinMs = Number(steps.SPIN_US) / 1000;
        channel.stepSyncMs = Number(steps.SYNC_US) / 1000;
        // With a core per rank nobody waits for this one's core: poll back to back a little first.
        channel.stepBusyMs = oversubscribed ? 0 : Number(steps.BUSY_US) / 1000;
      } else if (worker.progressMode === "hybrid" && oversubscribed) channel.stepSpinMs = Number(steps.SPIN_US) / 1000;
      return new UcgContext(rte, worker, channel, new Topology(hosts), config, ppool);
    } catch (e) {
      await channel.close().catch(() => {});
      await worker.close().catch(() => {});
      await channel.watchWorker?.close().catch(() => {});
      throw e;
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** @internal */
  addGroup(id: number, members: readonly number[]): Group {
    const g = new Group(this, id, members);
    this.groups.add(g);
    return g;
  }

  /** @internal */
  removeGroup(g: Group): void {
    this.groups.delete(g);
  }

  /**
   * Collective over the world: a barrier (so nobody closes a link another still needs; bounded
   * by `timeoutMs`, default 10 s), then the endpoints and the worker. A process that died makes
   * the barrier reject, and close goes on regardless.
   */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.#closed) return;
    if (!this.world.broken) await this.world.barrier({ timeoutMs: options.timeoutMs ?? 10_000 }).catch(() => {});
    this.#closed = true;
    await this.channel.close();
    await this.worker.close();
    await this.channel.watchWorker?.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
