/* The validator's cost on a nesting-heavy clean program: two threads, each nesting
 * three locks of classes both share (each thread's own three locks, made at the same
 * three sites) N times (argv[1], default 2,000,000). Prints "lockdep-nest: ok". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct three {
    pthread_mutex_t outer, middle, inner;
    long count;
};

static long rounds = 2000000;

static void three_init(struct three *t) {
    pthread_mutex_init(&t->outer, NULL);
    pthread_mutex_init(&t->middle, NULL);
    pthread_mutex_init(&t->inner, NULL);
}

static void *nest(void *arg) {
    struct three *t = arg;
    for (long i = 0; i < rounds; i++) {
        pthread_mutex_lock(&t->outer);
        pthread_mutex_lock(&t->middle);
        pthread_mutex_lock(&t->inner);
        t->count++;
        pthread_mutex_unlock(&t->inner);
        pthread_mutex_unlock(&t->middle);
        pthread_mutex_unlock(&t->outer);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atol(argv[1]);
    struct three *t = calloc(2, sizeof *t);
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        three_init(&t[i]);
        pthread_create(&threads[i], NULL, nest, &t[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    if (t[0].count != rounds || t[1].count != rounds)
        return 1;
    printf("lockdep-nest: ok\n");
    return 0;
}
