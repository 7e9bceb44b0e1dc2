/*
 * hs_ceiling -- the raw engine ceiling for the throughput benchmarks.
 *
 *   hs_ceiling PATTERNS_FILE LOG_FILE [THREADS]
 *
 * Compiles one expression per line of PATTERNS_FILE (HS_FLAG_MULTILINE, as
 * denpex_fast does), maps LOG_FILE and calls hs_scan over it, split at
 * newlines into THREADS parts (each under 2 GiB per call), counting matches
 * and nothing else.  Prints: bytes matches seconds
 */
#define _GNU_SOURCE
#include <hs.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    hs_database_t *db;
    const char *p;
    size_t n;
    unsigned long long matches;
} part_t;

static int on_match(unsigned id, unsigned long long f, unsigned long long t, unsigned fl, void *c) {
    (void)id; (void)f; (void)t; (void)fl;
    ((part_t *)c)->matches++;
    return 0;
}

static void *run(void *arg) {
    part_t *pt = arg;
    hs_scratch_t *s = NULL;
    if (hs_alloc_scratch(pt->db, &s) != HS_SUCCESS) { fprintf(stderr, "scratch\n"); exit(1); }
    const size_t step = (size_t)1 << 30;
    size_t off = 0;
    while (off < pt->n) {
        size_t len = pt->n - off < step ? pt->n - off : step;
        if (off + len < pt->n) {
            const char *nl = memchr(pt->p + off + len, '\n', pt->n - off - len);
            len = nl ? (size_t)(nl - (pt->p + off)) + 1 : pt->n - off;
        }
        hs_scan(pt->db, pt->p + off, (unsigned)len, 0, s, on_match, pt);
        off += len;
    }
    hs_free_scratch(s);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s PATTERNS LOG [THREADS]\n", argv[0]); return 2; }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    FILE *pf = fopen(argv[1], "r");
    if (!pf) { perror(argv[1]); return 2; }
    char **exprs = NULL; unsigned *flags = NULL, *ids = NULL, n = 0, cap = 0;
    char *line = NULL; size_t lcap = 0; ssize_t got;
    while ((got = getline(&line, &lcap, pf)) > 0) {
        if (line[got - 1] == '\n') line[--got] = 0;
        if (!got) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            exprs = realloc(exprs, cap * sizeof *exprs);
            flags = realloc(flags, cap * sizeof *flags);
            ids = realloc(ids, cap * sizeof *ids);
        }
        exprs[n] = strdup(line); flags[n] = HS_FLAG_MULTILINE; ids[n] = n; n++;
    }
    fclose(pf);
    hs_database_t *db; hs_compile_error_t *ce;
    if (hs_compile_multi((const char *const *)exprs, flags, ids, n, HS_MODE_BLOCK, NULL, &db, &ce) != HS_SUCCESS) {
        fprintf(stderr, "compile: %s (expression %d)\n", ce->message, ce->expression); return 2;
    }
    int fd = open(argv[2], O_RDONLY);
    struct stat st; fstat(fd, &st);
    size_t size = (size_t)st.st_size;
    const char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    madvise((void *)map, size, MADV_SEQUENTIAL);
    part_t *parts = calloc((size_t)threads, sizeof *parts);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    size_t start = 0;
    for (int i = 0; i < threads; i++) {
        size_t end = i == threads - 1 ? size : size / (size_t)threads * (size_t)(i + 1);
        if (end < size) { const char *nl = memchr(map + end, '\n', size - end); end = nl ? (size_t)(nl - map) + 1 : size; }
        if (end < start) end = start;
        parts[i] = (part_t){db, map + start, end - start, 0};
        start = end;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < threads; i++) pthread_create(&tids[i], NULL, run, &parts[i]);
    unsigned long long total = 0;
    for (int i = 0; i < threads; i++) { pthread_join(tids[i], NULL); total += parts[i].matches; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%zu %llu %.6f\n", size, total, secs);
    return 0;
}
