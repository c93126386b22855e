// An ordinary collectives script with nothing launcher-specific in it (the docs' allreduce
// example): test/ucg/mpirun.test.ts runs it under `mpirun -n 4`, where the rte finds its rank
// and size in Open MPI's OMPI_COMM_WORLD_RANK/SIZE and rank 0's address in UCX_TS_ROOT_ADDR.
// Each rank prints one line: MPIRUN_RESULT {"rank","size","launcher","sum"}.
import { UcgContext } from "../../src/index.ts";

const ucg = await UcgContext.create();
const world = ucg.world;
const sum = await world.allreduce(new Float64Array([world.rank, 1.5]), "sum");
console.log(`MPIRUN_RESULT ${JSON.stringify({ rank: world.rank, size: world.size, launcher: ucg.rte.launcher, sum: Array.from(sum) })}`);
await ucg.close();
