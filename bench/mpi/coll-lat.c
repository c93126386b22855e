/*
 * Open MPI's side of the collectives benchmark (bench/ucg.ts --compare-mpi, issue 23): the
 * latency of MPI_Allreduce (double, sum), MPI_Bcast (root 0) and MPI_Alltoall at the sizes given,
 * measured the way bench/ucg-rank.ts measures ucx-ts, so the two columns compare:
 *   - the size is the bytes per rank's buffer (allreduce/bcast: the vector; alltoall: the whole
 *     send buffer, split into `size` equal blocks of doubles, at least one per rank);
 *   - warm-up (1,000 calls below 64 KiB, else 20), then `iters` timed calls, each timed on its
 *     own and preceded by an untimed barrier (as OSU's collective benchmarks do): without it a
 *     bcast root, whose eager sends return at once, would time back-to-back calls overlapping,
 *     not one call's latency;
 *   - every rank computes its own mean and median; rank 0 prints the maximum over ranks of each
 *     (the slowest rank is what a caller waits for) as one JSON line per (collective, size).
 * Usage: mpirun -n N coll-lat [bytes,bytes,...] [iteration scale (1 = default counts)]
 * Built by the bench with mpicc into a temporary directory; not part of the library.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Iterations scaled by size so every point takes about the same time on a slow machine. */
static int iterations_for(long bytes, double scale)
{
    int n = bytes >= (1L << 20) ? 10 : bytes >= 65536 ? 30 : 200;
    n = (int)(n * scale);
    return n < 3 ? 3 : n;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One collective at one size: returns this rank's mean and median in microseconds. */
static void measure(const char *coll, long bytes, double scale, int size, double *mean, double *median)
{
    long n = bytes / 8 < 1 ? 1 : bytes / 8;
    long block = 1;
    if (strcmp(coll, "alltoall") == 0) {
        block = n / size < 1 ? 1 : n / size;
        n = block * size;
    }
    double *send = malloc(n * sizeof(double));
    double *recv = malloc(n * sizeof(double));
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "coll-lat: out of memory at %ld bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < n; i++) send[i] = 1.0;
    int iters = iterations_for(bytes, scale);
    /* As bench/ucg-rank.ts: 1,000 untimed calls below 64 KiB (ucx-ts's path needs them to be
       optimized by the JIT; the same count here keeps the two columns measured alike). */
    int warmup = bytes < 65536 ? 1000 : (iters < 20 ? iters : 20);
    double *times = malloc(iters * sizeof(double));
    for (int i = -warmup; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (strcmp(coll, "allreduce") == 0) {
            MPI_Allreduce(send, recv, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        } else if (strcmp(coll, "bcast") == 0) {
            MPI_Bcast(send, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        } else {
            MPI_Alltoall(send, (int)block, MPI_DOUBLE, recv, (int)block, MPI_DOUBLE, MPI_COMM_WORLD);
        }
        if (i >= 0) times[i] = (MPI_Wtime() - t) * 1e6;
    }
    double sum = 0;
    for (int i = 0; i < iters; i++) sum += times[i];
    *mean = sum / iters;
    qsort(times, iters, sizeof(double), compare_double);
    *median = times[iters / 2];
    free(times);
    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *sizes = argc > 1 ? argv[1] : "8,1024,65536,1048576,4194304";
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (!(scale > 0)) scale = 1.0;
    static const char *const colls[] = {"allreduce", "bcast", "alltoall"};
    for (int c = 0; c < 3; c++) {
        char *list = strdup(sizes);
        for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
            long bytes = atol(tok);
            double mine[2], worst[2];
            measure(colls[c], bytes, scale, size, &mine[0], &mine[1]);
            MPI_Reduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                printf("{\"coll\":\"%s\",\"ranks\":%d,\"bytes\":%ld,\"iters\":%d,\"mean_us\":%.2f,\"median_us\":%.2f}\n",
                       colls[c], size, bytes, iterations_for(bytes, scale), worst[0], worst[1]);
                fflush(stdout);
            }
        }
        free(list);
    }
    MPI_Finalize();
    return 0;
}
