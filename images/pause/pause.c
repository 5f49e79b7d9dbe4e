/*
 * The pod sandbox's process: holds the pod's namespaces open and does nothing else. As PID 1 of the
 * pod it also reaps orphaned children, and it exits cleanly on SIGTERM or SIGINT.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signal_number) {
    (void)signal_number;
    _exit(0);
}

static void reap(int signal_number) {
    (void)signal_number;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static void on(int signal_number, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = signal_number == SIGCHLD ? SA_NOCLDSTOP | SA_RESTART : 0;
    if (sigaction(signal_number, &action, NULL) != 0) {
        perror("pause: sigaction");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        puts("pause (mpioperator)");
        return 0;
    }
    on(SIGTERM, stop);
    on(SIGINT, stop);
    on(SIGCHLD, reap);
    for (;;) {
        pause();
    }
}
