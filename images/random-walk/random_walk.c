/*
 * Walkers on a line split among the ranks, as T9k's MPI tutorial job runs it (`./random_walk 20 40 2`).
 * Each rank owns an equal part of [0, DOMAIN); its walkers start at the part's left end with a random
 * number of steps (at most MAX_WALK) and walk right; one that leaves the part is handed to the next rank
 * (the last rank's go round to rank 0). Rounds of hand-overs go on until no walker anywhere has steps left.
 * Every rank names its host, so a launcher log shows where each rank ran.
 *
 * Usage: random_walk DOMAIN MAX_WALK WALKERS_PER_RANK
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    long position;
    long steps_left;
} Walker;

static long argument(char **argv, int i, long minimum) {
    char *end = NULL;
    long value = strtol(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0' || value < minimum) {
        fprintf(stderr, "random_walk: argument %d must be an integer of at least %ld, got '%s'\n", i, minimum,
                argv[i]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return value;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: random_walk DOMAIN MAX_WALK WALKERS_PER_RANK\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long domain = argument(argv, 1, size), max_walk = argument(argv, 2, 0), per_rank = argument(argv, 3, 0);
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);

    long width = domain / size;
    long start = rank * width;
    long end = rank == size - 1 ? domain : start + width;
    srand((unsigned)(rank + 1));
    /* Every walker of the job can end up on one rank. */
    long capacity = per_rank * size;
    Walker *here = malloc(sizeof(Walker) * (size_t)(capacity + 1));
    Walker *leaving = malloc(sizeof(Walker) * (size_t)(capacity + 1));
    long count = per_rank;
    for (long i = 0; i < count; i++) {
        here[i].position = start;
        here[i].steps_left = rand() % (max_walk + 1);
    }
    long finished = 0, steps = 0;
    int rounds = 0, next = (rank + 1) % size, previous = (rank + size - 1) % size;
    for (;;) {
        long out = 0;
        for (long i = 0; i < count; i++) {
            Walker w = here[i];
            while (w.steps_left > 0 && w.position < end) {
                w.position++;
                w.steps_left--;
                steps++;
            }
            if (w.steps_left == 0) {
                finished++;
            } else {
                w.position = end == domain ? 0 : end;
                leaving[out++] = w;
            }
        }
        MPI_Sendrecv(&out, 1, MPI_LONG, next, 0, &count, 1, MPI_LONG, previous, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(leaving, (int)(out * 2), MPI_LONG, next, 1, here, (int)(count * 2), MPI_LONG, previous, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        rounds++;
        long walking = 0;
        MPI_Allreduce(&count, &walking, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (walking == 0) break;
    }
    printf("rank %d: %ld walkers finished in [%ld, %ld) after %ld steps, %d rounds\n", rank, finished, start, end,
           steps, rounds);
    fflush(stdout);
    long all = 0;
    MPI_Reduce(&finished, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("random walk done: %ld of %ld walkers finished on %d ranks\n", all, per_rank * size, size);
        fflush(stdout);
    }
    free(here);
    free(leaving);
    MPI_Finalize();
    return 0;
}
