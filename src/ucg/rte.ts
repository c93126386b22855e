/**
 * The runtime environment (seed: "rte"): who this process is among how many, and where rank 0
 * listens for the bootstrap, read from the launcher's environment, so that nothing else in
 * src/ucg knows which launcher started the process. Launchers, first found wins:
 *  - ucx-ts's own `ucx-ts run -n N` (UCX_TS_RANK, UCX_TS_SIZE);
 *  - Open MPI's mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE);
 *  - PMIx launchers (PMIX_RANK with OMPI's or Slurm's size) and MPICH's Hydra (PMI_RANK, PMI_SIZE);
 *  - Slurm's srun (SLURM_PROCID, SLURM_NTASKS);
 *  - none: a single process (rank 0 of 1).
 * The bootstrap address is always UCX_TS_ROOT_ADDR=host:port (rank 0 listens on that port; the
 * others connect to host): `ucx-ts run` sets it, under mpirun/srun you export it.
 */
import { UcxError } from "../core/errors.ts";

export interface Rte {
  readonly rank: number;
  readonly size: number;
  /** Where rank 0's bootstrap listener is (needed when size > 1). */
  readonly root: { readonly host: string; readonly port: number } | undefined;
  /** Which launcher's variables gave rank and size. */
  readonly launcher: "ucx-ts" | "openmpi" | "pmix" | "pmi" | "slurm" | "single";
}

type Env = Readonly<Record<string, string | undefined>>;

const SOURCES: readonly { launcher: Rte["launcher"]; rank: string; size: readonly string[] }[] = [
  { launcher: "ucx-ts", rank: "UCX_TS_RANK", size: ["UCX_TS_SIZE"] },
  { launcher: "openmpi", rank: "OMPI_COMM_WORLD_RANK", size: ["OMPI_COMM_WORLD_SIZE"] },
  { launcher: "pmix", rank: "PMIX_RANK", size: ["PMIX_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"] },
  { launcher: "pmi", rank: "PMI_RANK", size: ["PMI_SIZE"] },
  { launcher: "slurm", rank: "SLURM_PROCID", size: ["SLURM_NTASKS", "SLURM_NPROCS"] },
];

function count(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(n) || n < min) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${name}=${raw}: expected an integer from ${min}`);
  }
  return n;
}

/** host:port, [v6]:port. */
export function parseRootAddress(raw: string): { host: string; port: number } {
  const m = /^\s*(?:\[([^\]]+)\]|([^:\s]+)):(\d+)\s*$/.exec(raw);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) {
    throw new UcxError("UCX_TS_INVALID_ARGUMENT", `UCX_TS_ROOT_ADDR=${raw}: expected host:port (rank 0's address and a free port, e.g. 10.0.0.1:13500)`);
  }
  return { host: m[1] ?? m[2]!, port };
}

export function detectRte(env: Env): Rte {
  for (const s of SOURCES) {
    const rawRank = env[s.rank];
    if (rawRank === undefined || rawRank === "") continue;
    const sizeName = s.size.find((n) => env[n] !== undefined && env[n] !== "");
    if (!sizeName) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${s.rank} is set but none of ${s.size.join(", ")} is: cannot tell the number of processes`);
    const rank = count(s.rank, rawRank, 0);
    const size = count(sizeName, env[sizeName]!, 1);
    if (rank >= size) throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${s.rank}=${rank} is not below ${sizeName}=${size}`);
    const rawRoot = env.UCX_TS_ROOT_ADDR;
    if (size > 1 && (rawRoot === undefined || rawRoot === "")) {
      throw new UcxError("UCX_TS_INVALID_ARGUMENT", `${size} processes (from ${s.launcher}'s ${s.rank}/${sizeName}) need UCX_TS_ROOT_ADDR=host:port: where rank 0 listens for the others (ucx-ts run sets it; with mpirun pass -x UCX_TS_ROOT_ADDR=<rank 0's host>:<port>)`);
    }
    return { rank, size, root: size > 1 ? parseRootAddress(rawRoot!) : undefined, launcher: s.launcher };
  }
  return { rank: 0, size: 1, root: undefined, launcher: "single" };
}
