/*
 * Open MPI's side of bench/ucg-cpu.ts (issue 23): what one MPI_Barrier + 8 B MPI_Allreduce
 * iteration costs each rank in CPU and in time waiting on a run queue, from
 * /proc/self/schedstat around `iters` back-to-back iterations after 1,000 warm-up ones. Every
 * rank prints one JSON line (the same fields as bench/ucg-cpu-rank.ts).
 * Usage: mpirun -n N coll-cpu [iters]. Built by the bench with mpicc; not part of the library.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* on-CPU ns, run-queue ns, time slices (Linux's /proc/self/schedstat). */
static void schedstat(double v[3])
{
    FILE *f = fopen("/proc/self/schedstat", "r");
    v[0] = v[1] = v[2] = 0;
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &v[0], &v[1], &v[2]) != 3) v[0] = v[1] = v[2] = 0;
        fclose(f);
    }
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    if (iters < 1) iters = 1;
    double one = 1, out, a[3], b[3];
    for (int i = 0; i < 1000; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(&one, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    double *t = malloc(iters * sizeof(double));
    schedstat(a);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        MPI_Allreduce(&one, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t[i] = (MPI_Wtime() - s) * 1e6;
    }
    double wall = (MPI_Wtime() - t0) * 1e6 / iters;
    schedstat(b);
    qsort(t, iters, sizeof(double), compare_double);
    printf("{\"rank\":%d,\"size\":%d,\"allreduce_median_us\":%.2f,\"wall_us\":%.2f,\"cpu_us\":%.2f,\"runq_us\":%.2f,\"slices\":%.2f}\n",
           rank, size, t[iters / 2], wall, (b[0] - a[0]) / 1e3 / iters, (b[1] - a[1]) / 1e3 / iters, (b[2] - a[2]) / iters);
    free(t);
    MPI_Finalize();
    return 0;
}
