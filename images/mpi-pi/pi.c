/*
 * Estimates pi by integrating 4/(1+x^2) over [0,1] with the midpoint rule, the intervals dealt out to
 * the ranks round-robin. Every rank names its host, so a launcher log shows where each rank ran.
 *
 * Usage: pi [--intervals N] [--exit-code K]
 *   --exit-code K  rank 0 exits with K after MPI_Finalize (a job whose MPI program fails on purpose).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PI_25_DIGITS 3.141592653589793238462643

static long parse_long(const char *text, const char *option) {
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0') {
        fprintf(stderr, "pi: %s needs an integer, got '%s'\n", option, text);
        exit(2);
    }
    return value;
}

int main(int argc, char **argv) {
    long intervals = 20000000;
    int exit_code = 0;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--intervals") == 0 && i + 1 < argc) {
            intervals = parse_long(argv[++i], "--intervals");
        } else if (strcmp(argv[i], "--exit-code") == 0 && i + 1 < argc) {
            exit_code = (int)parse_long(argv[++i], "--exit-code");
        } else {
            fprintf(stderr, "pi: unknown argument '%s'\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }

    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);

    double start = MPI_Wtime();
    double width = 1.0 / (double)intervals;
    double partial = 0.0;
    for (long i = rank; i < intervals; i += size) {
        double x = width * ((double)i + 0.5);
        partial += 4.0 / (1.0 + x * x);
    }
    partial *= width;
    double pi = 0.0;
    MPI_Reduce(&partial, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double elapsed = MPI_Wtime() - start;

    if (rank == 0) {
        printf("pi is approximately %.16f, error %.3e, %d ranks, %.3f s\n", pi, fabs(pi - PI_25_DIGITS), size,
               elapsed);
        fflush(stdout);
    }
    /* Every rank is done sending before any rank finalizes, so MPI_Finalize never has to flush a message
     * a peer is still waiting for (the images' MPICH is 4.3 from PyPI; Debian's 4.0 could hang there). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return rank == 0 ? exit_code : 0;
}
