/*
 * two_threads.c — the same fixed loop (additions only: no memory, no locks)
 * on THREADS threads at once. bench/two_threads.sh times one thread against
 * two: on a machine with two full cores both take the same wall time.
 */
#include <pthread.h>
#include <stdlib.h>

static void *spin(void *arg)
{
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 3000000000UL; i++) {
        x += i;
    }
    return arg;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1;
    pthread_t t[64];
    if (n < 1 || n > 64) {
        return 2;
    }
    for (int i = 0; i < n; i++) {
        if (pthread_create(&t[i], NULL, spin, NULL) != 0) {
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
    }
    return 0;
}
