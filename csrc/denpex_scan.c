/*
 * denpex_scan.c -- Hyperscan over memory-mapped logs into Arrow-ready columns.
 *
 * Hot-path rules (see csrc/denpex_scan.h for the API):
 *  - block mode only; files are cut into newline-aligned blocks of about
 *    opt->block_size bytes, so every block starts a line and the newline
 *    count of a block is taken while the block is still in cache;
 *  - Hyperscan reports end offsets only (start-of-match is expensive); the
 *    line start is found by counting newlines between matches (SIMD) and one
 *    memrchr;
 *  - one row per (line, signature): later ends of the same pattern in the
 *    same line (a trailing `.+` reports every end) are dropped here, in C;
 *  - rows per signature are capped, counts stay exact, memory stays bounded;
 *  - a file that shrinks while mapped raises SIGBUS inside hs_scan/memchr;
 *    a thread-local sigsetjmp turns that into DX_ERR_TRUNCATED and keeps
 *    every row already stored.
 */
#define _GNU_SOURCE
#include "denpex_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <hs.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

struct dx_db {
    hs_database_t *hs;
    unsigned int n_sigs;
};

struct dx_scratch {
    hs_scratch_t *hs;
    char *buf;      /* small files are read here whole (see dx_scan_file) */
    uint64_t cap;
    char *clean;    /* a block without its terminal codes (see scan_clean) */
    uint64_t clean_cap;
    uint64_t *starts; /* the file offset of each line of that block */
    uint64_t starts_cap;
};

/* ------------------------------------------------------------------ errors */

static int set_err(dx_error *err, int status, const char *fmt, const char *arg) {
    if (err) {
        err->status = status;
        if (arg)
            snprintf(err->message, sizeof err->message, fmt, arg);
        else
            snprintf(err->message, sizeof err->message, "%s", fmt);
    }
    return status;
}

static int set_hs_err(dx_error *err, int status, hs_error_t rc, const char *what) {
    if (err) {
        err->status = status;
        err->hs_error = rc;
        snprintf(err->message, sizeof err->message, "%s failed (libhs error %d)", what, rc);
    }
    return status;
}

static int set_io_err(dx_error *err, int status, int e, const char *what) {
    if (err) {
        err->status = status;
        err->err_no = e;
        snprintf(err->message, sizeof err->message, "%s: %s", what, strerror(e));
    }
    return status;
}

/* ------------------------------------------------------- newline counting */

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint64_t count_nl_avx2(const char *p, uint64_t n) {
    uint64_t total = 0, i = 0;
    const __m256i nl = _mm256_set1_epi8('\n');
    while (n - i >= 32) {
        /* cmpeq gives -1 per hit; accumulate up to 255 rounds in byte lanes */
        __m256i acc = _mm256_setzero_si256();
        uint64_t rounds = (n - i) / 32;
        if (rounds > 255) rounds = 255;
        for (uint64_t r = 0; r < rounds; r++, i += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(p + i));
            acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v, nl));
        }
        __m256i sums = _mm256_sad_epu8(acc, _mm256_setzero_si256());
        total += (uint64_t)_mm256_extract_epi64(sums, 0) + (uint64_t)_mm256_extract_epi64(sums, 1) +
                 (uint64_t)_mm256_extract_epi64(sums, 2) + (uint64_t)_mm256_extract_epi64(sums, 3);
    }
    for (; i < n; i++) total += p[i] == '\n';
    return total;
}

static uint64_t count_nl_sse2(const char *p, uint64_t n) {
    uint64_t total = 0, i = 0;
    const __m128i nl = _mm_set1_epi8('\n');
    while (n - i >= 16) {
        __m128i acc = _mm_setzero_si128();
        uint64_t rounds = (n - i) / 16;
        if (rounds > 255) rounds = 255;
        for (uint64_t r = 0; r < rounds; r++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, nl));
        }
        __m128i sums = _mm_sad_epu8(acc, _mm_setzero_si128());
        total += (uint64_t)_mm_cvtsi128_si64(sums) + (uint64_t)_mm_extract_epi16(sums, 4);
    }
    for (; i < n; i++) total += p[i] == '\n';
    return total;
}

static uint64_t (*count_nl_impl)(const char *, uint64_t);
static pthread_once_t count_nl_once = PTHREAD_ONCE_INIT;
static void pick_count_nl(void) {
    __builtin_cpu_init();
    count_nl_impl = __builtin_cpu_supports("avx2") ? count_nl_avx2 : count_nl_sse2;
}
static inline uint64_t count_nl(const char *p, uint64_t n) {
    if (n < 64) {
        uint64_t t = 0;
        for (uint64_t i = 0; i < n; i++) t += p[i] == '\n';
        return t;
    }
    return count_nl_impl(p, n);
}
#else
static pthread_once_t count_nl_once = PTHREAD_ONCE_INIT;
static void pick_count_nl(void) {}
static inline uint64_t count_nl(const char *p, uint64_t n) {
    uint64_t t = 0;
    for (uint64_t i = 0; i < n; i++) t += p[i] == '\n';
    return t;
}
#endif

uint64_t dx_count_newlines(const char *data, uint64_t length) {
    pthread_once(&count_nl_once, pick_count_nl);
    return data ? count_nl(data, length) : 0;
}

/* ------------------------------------------------------------ UTF-8 repair */

/* Replaces each maximal invalid subpart with U+FFFD, as Python's
 * bytes.decode("utf-8", "replace") does, so both agree byte for byte. */
uint64_t dx_utf8_sanitize(const char *src_, uint64_t n, char *dst_) {
    const unsigned char *s = (const unsigned char *)src_;
    unsigned char *d = (unsigned char *)dst_;
    uint64_t i = 0, o = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL) break;
            memcpy(d + o, &w, 8);
            i += 8;
            o += 8;
        }
        if (i >= n) break;
        unsigned char c = s[i];
        if (c < 0x80) {
            d[o++] = c;
            i++;
            continue;
        }
        int need;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            d[o++] = 0xEF; d[o++] = 0xBF; d[o++] = 0xBD;
            i++;
            continue;
        }
        uint64_t j = i + 1;
        int got = 0;
        while (got < need && j < n) {
            unsigned char b = s[j];
            unsigned char l = got == 0 ? lo : 0x80, h = got == 0 ? hi : 0xBF;
            if (b < l || b > h) break;
            j++;
            got++;
        }
        if (got == need) {
            memcpy(d + o, s + i, (size_t)(j - i));
            o += j - i;
        } else {
            d[o++] = 0xEF; d[o++] = 0xBF; d[o++] = 0xBD;
        }
        i = j;
    }
    return o;
}

/* ---------------------------------------------------------------- version */

const char *dx_hs_version(void) { return hs_version(); }

int dx_platform_supported(void) { return hs_valid_platform() == HS_SUCCESS; }

int dx_platform_key(char *buf, size_t len) {
    hs_platform_info_t p;
    if (hs_populate_platform(&p) != HS_SUCCESS) return DX_ERR_HS;
    snprintf(buf, len, "tune=%u;features=%llu", p.tune, (unsigned long long)p.cpu_features);
    return DX_OK;
}

/* --------------------------------------------------------------- database */

int dx_compile(const char *const *expressions, const unsigned int *flags,
               const unsigned int *ids, unsigned int count, unsigned int n_sigs,
               dx_db **out, dx_error *err) {
    if (err) err->expression = -1;
    if (!out || !expressions || !ids || count == 0 || n_sigs == 0)
        return set_err(err, DX_ERR_ARG, "dx_compile: empty pattern set", NULL);
    for (unsigned int i = 0; i < count; i++)
        if (ids[i] >= n_sigs) return set_err(err, DX_ERR_ARG, "dx_compile: id out of range", NULL);
    hs_database_t *hdb = NULL;
    hs_compile_error_t *cerr = NULL;
    hs_error_t rc = hs_compile_multi(expressions, flags, ids, count, HS_MODE_BLOCK, NULL, &hdb, &cerr);
    if (rc != HS_SUCCESS) {
        if (err) {
            err->status = DX_ERR_COMPILE;
            err->hs_error = rc;
            err->expression = cerr ? cerr->expression : -1;
            snprintf(err->message, sizeof err->message, "%s",
                     cerr && cerr->message ? cerr->message : "compile failed");
        }
        if (cerr) hs_free_compile_error(cerr);
        return DX_ERR_COMPILE;
    }
    dx_db *db = calloc(1, sizeof *db);
    if (!db) {
        hs_free_database(hdb);
        return set_err(err, DX_ERR_NOMEM, "out of memory", NULL);
    }
    db->hs = hdb;
    db->n_sigs = n_sigs;
    *out = db;
    return DX_OK;
}

int dx_serialize(const dx_db *db, char **bytes, size_t *length, dx_error *err) {
    if (!db || !bytes || !length) return set_err(err, DX_ERR_ARG, "dx_serialize: null argument", NULL);
    hs_error_t rc = hs_serialize_database(db->hs, bytes, length);
    if (rc != HS_SUCCESS) return set_hs_err(err, DX_ERR_HS, rc, "hs_serialize_database");
    return DX_OK;
}

void dx_bytes_free(char *bytes) { free(bytes); }

int dx_deserialize(const char *bytes, size_t length, unsigned int n_sigs, dx_db **out,
                   dx_error *err) {
    if (!bytes || !out || n_sigs == 0) return set_err(err, DX_ERR_ARG, "dx_deserialize: null argument", NULL);
    hs_database_t *hdb = NULL;
    hs_error_t rc = hs_deserialize_database(bytes, length, &hdb);
    if (rc != HS_SUCCESS) return set_hs_err(err, DX_ERR_DB, rc, "hs_deserialize_database");
    /* A foreign database (stream mode, other library build) is rejected here. */
    char *info = NULL;
    if (hs_database_info(hdb, &info) != HS_SUCCESS || !info || !strstr(info, "BLOCK")) {
        free(info);
        hs_free_database(hdb);
        return set_err(err, DX_ERR_DB, "serialized database is not a block-mode database", NULL);
    }
    free(info);
    dx_db *db = calloc(1, sizeof *db);
    if (!db) {
        hs_free_database(hdb);
        return set_err(err, DX_ERR_NOMEM, "out of memory", NULL);
    }
    db->hs = hdb;
    db->n_sigs = n_sigs;
    *out = db;
    return DX_OK;
}

unsigned int dx_db_sigs(const dx_db *db) { return db ? db->n_sigs : 0; }

void dx_db_free(dx_db *db) {
    if (!db) return;
    hs_free_database(db->hs);
    free(db);
}

int dx_scratch_new(const dx_db *db, dx_scratch **out, dx_error *err) {
    if (!db || !out) return set_err(err, DX_ERR_ARG, "dx_scratch_new: null argument", NULL);
    dx_scratch *s = calloc(1, sizeof *s);
    if (!s) return set_err(err, DX_ERR_NOMEM, "out of memory", NULL);
    hs_error_t rc = hs_alloc_scratch(db->hs, &s->hs);
    if (rc != HS_SUCCESS) {
        free(s);
        return set_hs_err(err, DX_ERR_HS, rc, "hs_alloc_scratch");
    }
    *out = s;
    return DX_OK;
}

void dx_scratch_free(dx_scratch *s) {
    if (!s) return;
    hs_free_scratch(s->hs);
    free(s->buf);
    free(s->clean);
    free(s->starts);
    free(s);
}

/* ------------------------------------------------------------ tally/result */

dx_tally *dx_tally_new(uint32_t n_sigs) {
    dx_tally *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->n_sigs = n_sigs;
    t->last_line = calloc(n_sigs ? n_sigs : 1, sizeof(uint64_t));
    t->kept = calloc(n_sigs ? n_sigs : 1, sizeof(uint64_t));
    t->count = calloc(n_sigs ? n_sigs : 1, sizeof(uint64_t));
    if (!t->last_line || !t->kept || !t->count) {
        dx_tally_free(t);
        return NULL;
    }
    return t;
}

void dx_tally_reset(dx_tally *t) {
    if (!t) return;
    memset(t->last_line, 0, t->n_sigs * sizeof(uint64_t));
    memset(t->kept, 0, t->n_sigs * sizeof(uint64_t));
    memset(t->count, 0, t->n_sigs * sizeof(uint64_t));
    t->any_last = 0;
    t->any_count = 0;
}

void dx_tally_free(dx_tally *t) {
    if (!t) return;
    free(t->last_line);
    free(t->kept);
    free(t->count);
    free(t);
}


/* Column buffers live in their own anonymous mappings, grown with mremap:
 * growth never copies, and freeing returns the memory to the OS at once
 * (glibc's heap keeps freed multi-MB blocks of worker-thread arenas, so a
 * dropped table would otherwise leave RSS high).  Sanitizer builds use
 * malloc so ASan sees every access. */
#if defined(DX_USE_MALLOC) || !defined(__linux__)
static void *region_grow(void *p, size_t old, size_t size) {
    (void)old;
    return realloc(p, size);
}
static void region_free(void *p, size_t size) {
    (void)size;
    free(p);
}
#else
static void *region_grow(void *p, size_t old, size_t size) {
    void *q = p ? mremap(p, old, size, MREMAP_MAYMOVE)
                : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return q == MAP_FAILED ? NULL : q;
}
static void region_free(void *p, size_t size) {
    if (p) munmap(p, size);
}
#endif

/* Freed results park their column buffers here for the next result.  A
 * streamed scan (`denpex scan` printing) makes and drops one result per
 * unit: without reuse every unit faults its pages in afresh and the kernel
 * zeroes them, which cost more than the rows themselves (~0.6 s of CPU per
 * GiB of printed text).  The cache is small and bounded, so a table that is
 * dropped still hands its memory back to the OS beyond it. */
#define RESULT_CACHE_SLOTS 2
#define RESULT_CACHE_BYTES ((uint64_t)96 << 20)
static dx_result *result_cache[RESULT_CACHE_SLOTS];
static uint64_t result_cache_bytes;
static int result_cache_users; /* streamed scans under way: parking is on */
static pthread_mutex_t result_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t result_bytes(const dx_result *r) {
    return r->cap_rows * (3 * sizeof(uint64_t) + 2 * sizeof(uint32_t) + sizeof(int32_t)) +
           r->text_cap;
}

/* Keep r's buffers for reuse; 0 when the cache is full (the caller frees). */
static int result_park(dx_result *r) {
#ifdef DX_USE_MALLOC
    (void)r;
    return 0; /* sanitizer builds: a freed buffer must stay freed for ASan */
#endif
    if (!r->cap_rows || !r->text_cap) return 0;
    uint64_t bytes = result_bytes(r);
    int parked = 0;
    pthread_mutex_lock(&result_cache_lock);
    if (result_cache_users > 0 && result_cache_bytes + bytes <= RESULT_CACHE_BYTES) {
        for (int i = 0; i < RESULT_CACHE_SLOTS; i++) {
            if (!result_cache[i]) {
                result_cache[i] = r;
                result_cache_bytes += bytes;
                parked = 1;
                break;
            }
        }
    }
    pthread_mutex_unlock(&result_cache_lock);
    return parked;
}

dx_result *dx_result_new(void) {
    dx_result *r = NULL;
    pthread_mutex_lock(&result_cache_lock);
    for (int i = 0; i < RESULT_CACHE_SLOTS && !r; i++) {
        if (result_cache[i]) {
            r = result_cache[i];
            result_cache[i] = NULL;
            result_cache_bytes -= result_bytes(r);
        }
    }
    pthread_mutex_unlock(&result_cache_lock);
    if (r) {
        /* the buffers and their capacities stay; everything else starts over */
        dx_result fresh = {0};
        fresh.cap_rows = r->cap_rows;
        fresh.line = r->line;
        fresh.offset = r->offset;
        fresh.match_end = r->match_end;
        fresh.sig = r->sig;
        fresh.file = r->file;
        fresh.text_offsets = r->text_offsets;
        fresh.text = r->text;
        fresh.text_cap = r->text_cap;
        *r = fresh;
        r->text_offsets[0] = 0;
        return r;
    }
    r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->text_offsets = calloc(1, sizeof(int32_t));
    if (!r->text_offsets) {
        free(r);
        return NULL;
    }
    return r;
}

static void result_release(dx_result *r);

void dx_result_reuse(int on) {
    dx_result *drop[RESULT_CACHE_SLOTS] = {0};
    pthread_mutex_lock(&result_cache_lock);
    result_cache_users += on ? 1 : -1;
    if (result_cache_users <= 0) {
        /* the last streamed scan ended: its parked buffers go back to the OS */
        result_cache_users = 0;
        for (int i = 0; i < RESULT_CACHE_SLOTS; i++) {
            drop[i] = result_cache[i];
            result_cache[i] = NULL;
        }
        result_cache_bytes = 0;
    }
    pthread_mutex_unlock(&result_cache_lock);
    for (int i = 0; i < RESULT_CACHE_SLOTS; i++)
        if (drop[i]) result_release(drop[i]);
}

uint64_t dx_result_reuse_bytes(void) {
    pthread_mutex_lock(&result_cache_lock);
    uint64_t n = result_cache_bytes;
    pthread_mutex_unlock(&result_cache_lock);
    return n;
}

void dx_result_free(dx_result *r) {
    if (!r) return;
    if (result_park(r)) return;
    result_release(r);
}

static void result_release(dx_result *r) {
    size_t cap = (size_t)r->cap_rows;
    if (cap) {
        region_free(r->line, cap * sizeof(uint64_t));
        region_free(r->offset, cap * sizeof(uint64_t));
        region_free(r->match_end, cap * sizeof(uint64_t));
        region_free(r->sig, cap * sizeof(uint32_t));
        region_free(r->file, cap * sizeof(uint32_t));
        region_free(r->text_offsets, (cap + 1) * sizeof(int32_t));
    } else {
        free(r->text_offsets); /* the initial one-entry array */
    }
    if (r->text_cap) region_free(r->text, (size_t)r->text_cap);
    free(r);
}

static int grow_rows(dx_result *r) {
    size_t old = (size_t)r->cap_rows;
    size_t cap = old ? old * 2 : 1024;
    /* the widest column is 8 bytes a row (and one more offset): refuse a
     * capacity whose byte size would wrap */
    if (cap < old || cap > (SIZE_MAX - sizeof(int32_t)) / sizeof(uint64_t)) return -1;
    /* Every column has `old` rows of room; they grow one by one.  When one
     * fails, those already grown are shrunk back so that all columns keep
     * the same capacity (dx_result_free and the next grow rely on it). */
    struct { void **field; size_t width; } cols[] = {
        {(void **)&r->line, sizeof(uint64_t)},     {(void **)&r->offset, sizeof(uint64_t)},
        {(void **)&r->match_end, sizeof(uint64_t)}, {(void **)&r->sig, sizeof(uint32_t)},
        {(void **)&r->file, sizeof(uint32_t)},
    };
    size_t n_cols = sizeof cols / sizeof cols[0], k;
    for (k = 0; k < n_cols; k++) {
        void *p = region_grow(*cols[k].field, old * cols[k].width, cap * cols[k].width);
        if (!p) break;
        *cols[k].field = p;
    }
    void *offs = NULL;
    if (k == n_cols) {
        if (old == 0) {
            offs = region_grow(NULL, 0, (cap + 1) * sizeof(int32_t));
            if (offs) {
                ((int32_t *)offs)[0] = 0;
                free(r->text_offsets); /* the initial one-entry array */
            }
        } else {
            offs = region_grow(r->text_offsets, (old + 1) * sizeof(int32_t),
                               (cap + 1) * sizeof(int32_t));
        }
    }
    if (!offs) {
        while (k-- > 0) {
            if (old) {
                void *p = region_grow(*cols[k].field, cap * cols[k].width, old * cols[k].width);
                if (p) *cols[k].field = p; /* shrinking in place does not fail in practice */
            } else {
                region_free(*cols[k].field, cap * cols[k].width);
                *cols[k].field = NULL;
            }
        }
        return -1;
    }
    r->text_offsets = offs;
    r->cap_rows = cap;
    return 0;
}

/* Arrow `string` offsets are int32: text beyond 2 GiB per result is dropped. */
#define TEXT_LIMIT ((uint64_t)0x7FFFFFFF)

static int reserve_text(dx_result *r, uint64_t extra) {
    uint64_t want = r->text_len + extra;
    if (want <= r->text_cap) return 0;
    if (want < r->text_len || want > TEXT_LIMIT + 16) return -1; /* callers stay below */
    uint64_t cap = r->text_cap ? r->text_cap : 65536;
    while (cap < want) cap *= 2;
    if (cap > TEXT_LIMIT + 16) cap = TEXT_LIMIT + 16;
    char *p = region_grow(r->text, (size_t)r->text_cap, (size_t)cap);
    if (!p) return -1;
    r->text = p;
    r->text_cap = cap;
    return 0;
}

/* --------------------------------------------------------------- matching */

typedef struct {
    const dx_options *opt;
    dx_tally *tally;
    dx_result *res;
    const char *mem;     /* memory that may be read for text: [mem, mem+mem_len) */
    uint64_t mem_base;   /* absolute offset of mem[0] */
    uint64_t mem_len;
    uint64_t scan_base;  /* absolute offset of the block hs_scan is reading */
    uint64_t pos;        /* absolute offset up to which newlines are counted */
    uint64_t line;       /* 0-based line number at pos, relative to base_line */
    uint64_t line_start; /* absolute offset of the line containing pos */
    uint64_t base_line;
    int failed;          /* DX_ERR_NOMEM raised inside the callback */
    /* scanning a cleaned copy (scan_clean): mem is the copy, and the file
     * offset of its k-th line is starts[k], where k = line - line0 */
    const uint64_t *starts;
    uint64_t n_starts;
    uint64_t line0;
} scan_ctx;

/* Advance the newline bookkeeping so that `pos` reaches absolute offset `to`. */
static inline void advance_to(scan_ctx *c, uint64_t to) {
    if (to > c->pos) {
        const char *p = c->mem + (c->pos - c->mem_base);
        uint64_t n = to - c->pos;
        uint64_t k = count_nl(p, n);
        if (k) {
            const char *last = memrchr(p, '\n', (size_t)n);
            c->line += k;
            c->line_start = c->mem_base + (uint64_t)(last - c->mem) + 1;
        }
        c->pos = to;
    } else if (to < c->pos) {
        /* Hyperscan reports ends in order; this guards re-scanned overlaps. */
        const char *p = c->mem + (to - c->mem_base);
        uint64_t k = count_nl(p, c->pos - to);
        if (k) {
            c->line -= k;
            const char *last = memrchr(c->mem, '\n', (size_t)(to - c->mem_base));
            c->line_start = last ? c->mem_base + (uint64_t)(last - c->mem) + 1 : c->mem_base;
        }
        c->pos = to;
    }
}

static int store_row(scan_ctx *c, unsigned int id, uint64_t end, uint64_t last_byte) {
    dx_result *r = c->res;
    const dx_options *o = c->opt;
    if (r->n_rows == r->cap_rows && grow_rows(r) != 0) return -1;

    /* Text: the line from its start, or when the match ends more than
     * max_text bytes into a long line, the max_text bytes ending there. */
    uint64_t mem_end = c->mem_base + c->mem_len;
    uint64_t lo = c->line_start > c->mem_base ? c->line_start : c->mem_base;
    int from_start = 1;
    if (end > lo + o->max_text) {
        lo = end - o->max_text;
        from_start = 0;
    }
    uint64_t limit = lo + o->max_text < mem_end ? lo + o->max_text : mem_end;
    uint64_t hi = limit;
    int at_eol = limit == mem_end;
    if (last_byte < limit) {
        const char *nl = memchr(c->mem + (last_byte - c->mem_base), '\n', (size_t)(limit - last_byte));
        if (nl) {
            hi = c->mem_base + (uint64_t)(nl - c->mem);
            at_eol = 1;
        }
    }
    /* the window ends just before the newline (a line of exactly max_text
     * bytes, or a match whose end takes in a CRLF's CR): the newline sits at
     * `limit`, just outside the search, and the CR must still go */
    if (!at_eol && c->mem[limit - c->mem_base] == '\n') at_eol = 1;
    if (hi < lo) hi = lo;
    if (at_eol && hi > lo && c->mem[hi - 1 - c->mem_base] == '\r') hi--;

    uint64_t n = r->n_rows;
    uint64_t tlen = hi - lo;
    if (r->text_len + 3 * tlen > TEXT_LIMIT) {
        r->text_dropped++;
        tlen = 0;
    }
    if (tlen) {
        if (reserve_text(r, 3 * tlen) != 0) return -1;
        r->text_len += dx_utf8_sanitize(c->mem + (lo - c->mem_base), tlen, r->text + r->text_len);
    }
    r->line[n] = c->base_line + c->line + 1;
    if (c->starts) {
        /* the file's own line start; the end keeps its place in `text` */
        uint64_t k = c->line - c->line0;
        uint64_t start = c->starts[k < c->n_starts ? k : c->n_starts - 1];
        r->offset[n] = start;
        r->match_end[n] = start + (end - c->line_start);
    } else {
        r->offset[n] = c->line_start;
        r->match_end[n] = end;
    }
    r->sig[n] = id;
    r->file[n] = o->file_index;
    r->text_offsets[n + 1] = (int32_t)r->text_len;
    r->n_rows = n + 1; /* commit last: a SIGBUS above leaves no half row */
    return 0;
}

static int on_match(unsigned int id, unsigned long long from, unsigned long long to,
                    unsigned int flags, void *ctx) {
    (void)from;
    (void)flags;
    scan_ctx *c = ctx;
    uint64_t end = c->scan_base + (uint64_t)to;
    uint64_t last_byte = end > c->scan_base ? end - 1 : c->scan_base;
    advance_to(c, last_byte);
    dx_tally *t = c->tally;
    if (id >= t->n_sigs) return 0;
    uint64_t key = c->base_line + c->line + 1;
    if (t->any_last != key) { /* matches come in end-offset order: lines ascend */
        t->any_last = key;
        t->any_count++;
    }
    if (t->last_line[id] == key) return 0; /* same line, same signature */
    t->last_line[id] = key;
    t->count[id]++;
    if (t->kept[id] >= (c->opt->sig_caps ? c->opt->sig_caps[id] : c->opt->max_rows_per_sig)) return 0;
    if (store_row(c, id, end, last_byte) != 0) {
        c->failed = DX_ERR_NOMEM;
        return 1; /* terminates hs_scan */
    }
    t->kept[id]++;
    return 0;
}

static int grow(void **p, uint64_t *cap, uint64_t want, size_t size) {
    if (want <= *cap) return 0;
    uint64_t n = *cap ? *cap : 4096;
    while (n < want) n *= 2;
    void *q = realloc(*p, (size_t)(n * size));
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Scan the block buf[0, len) (starting at file offset lo, a line start)
 * without its terminal control sequences: a log captured from a colour
 * terminal (Ray, vLLM, rich, loguru) has "\x1b[31mRuntimeError:\x1b[0m ..."
 * where the patterns expect "RuntimeError: ...".  Only bytes inside lines go,
 * so line numbers hold; rows report the file's line starts (for reading the
 * lines back) and the cleaned text. */
static hs_error_t scan_clean(const dx_db *db, dx_scratch *s, scan_ctx *c, uint64_t lo,
                             const char *buf, size_t len) {
    if (grow((void **)&s->clean, &s->clean_cap, (uint64_t)len + 1, 1) != 0 ||
        grow((void **)&s->starts, &s->starts_cap, count_nl(buf, len) + 2, sizeof(uint64_t)) != 0) {
        c->failed = DX_ERR_NOMEM;
        return HS_SUCCESS;
    }
    char *out = s->clean;
    uint64_t *starts = s->starts;
    size_t o = 0;
    uint64_t k = 0;
    starts[k++] = lo;
    for (size_t i = 0; i < len;) {
        if (buf[i] == 0x1b && i + 1 < len && buf[i + 1] == '[') {
            size_t j = i + 2;
            while (j < len && ((buf[j] >= '0' && buf[j] <= '9') || buf[j] == ';' || buf[j] == '?')) j++;
            if (j < len && ((buf[j] | 0x20) >= 'a' && (buf[j] | 0x20) <= 'z')) {
                i = j + 1;
                continue;
            }
        }
        out[o++] = buf[i];
        if (buf[i] == '\n') starts[k++] = lo + i + 1;
        i++;
    }
    /* a copy that ends with a newline (see the final-line note in scan_blocks) */
    if (!o || out[o - 1] != '\n') out[o++] = '\n';
    scan_ctx cc = *c;
    cc.mem = out;
    cc.mem_base = 0;
    cc.mem_len = o;
    cc.scan_base = 0;
    cc.pos = 0;
    cc.line_start = 0;
    cc.starts = starts;
    cc.n_starts = k;
    cc.line0 = c->line;
    hs_error_t rc = hs_scan(db->hs, out, (unsigned int)o, 0, s->hs, on_match, &cc);
    c->failed = cc.failed;
    return rc;
}

static int check_opts(const dx_options *o) {
    return o && o->block_size > 0 && o->max_text > 0 && o->max_piece <= 0x7FFFFFFFULL &&
           o->block_size + o->overlap <= o->max_piece;
}

/* Scan [start, end) of the window in block_size steps.  Each block ends just
 * after a newline; a line longer than max_piece is cut, and the next piece
 * re-scans `overlap` bytes so a match across the cut is still found (the
 * per-line de-duplication drops the repeats). */
static int scan_blocks(const dx_db *db, dx_scratch *s, scan_ctx *c, uint64_t start, uint64_t end,
                       const char *map, dx_error *err) {
    const dx_options *o = c->opt;
    uint64_t p = start, released = start;
    int forced = 0; /* previous block ended inside a line */
    while (p < end) {
        if (o->cancel && *o->cancel) return set_err(err, DX_ERR_CANCELLED, "scan cancelled", NULL);
        uint64_t target = p + o->block_size < end ? p + o->block_size : end;
        uint64_t q = end;
        if (target < end) {
            uint64_t piece_end = p + o->max_piece < end ? p + o->max_piece : end;
            const char *from = c->mem + (target - 1 - c->mem_base);
            const char *nl = memchr(from, '\n', (size_t)(piece_end - (target - 1)));
            q = nl ? c->mem_base + (uint64_t)(nl - c->mem) + 1 : piece_end;
        }
        uint64_t lo = p;
        if (forced) lo = p - c->mem_base > o->overlap ? p - o->overlap : c->mem_base;
        c->scan_base = lo;
        const char *buf = c->mem + (lo - c->mem_base);
        size_t len = (size_t)(q - lo);
        hs_error_t rc;
        if (o->strip_ansi && !forced && lo == c->pos && lo == c->line_start &&
            memchr(buf, 0x1b, len)) {
            rc = scan_clean(db, s, c, lo, buf, len);
        } else if (q == end && len && buf[len - 1] != '\n') {
            /* The window ends inside a line (a file without a final newline).
             * Vectorscan's double-byte accelerator can miss a match whose last
             * two bytes are the buffer's last two (VectorCamp/vectorscan#358,
             * fixed upstream in #368); a copy that ends with a newline is never
             * cut there.  Patterns never match a newline, so no match is added. */
            char *tmp = malloc(len + 1);
            if (!tmp) return set_err(err, DX_ERR_NOMEM, "out of memory copying a final line", NULL);
            memcpy(tmp, buf, len);
            tmp[len] = '\n';
            rc = hs_scan(db->hs, tmp, (unsigned int)(len + 1), 0, s->hs, on_match, c);
            free(tmp);
        } else {
            rc = hs_scan(db->hs, buf, (unsigned int)len, 0, s->hs, on_match, c);
        }
        if (c->failed) return set_err(err, c->failed, "out of memory while storing matches", NULL);
        if (rc != HS_SUCCESS && rc != HS_SCAN_TERMINATED) return set_hs_err(err, DX_ERR_HS, rc, "hs_scan");
        advance_to(c, q);
        c->res->scanned += q - p;
        forced = q < end && c->mem[q - 1 - c->mem_base] != '\n';
        p = q;
        if (map && o->release_every && p - released >= o->release_every) {
            /* drop the pages behind us from this mapping: RSS stays bounded */
            uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
            uint64_t keep = forced ? o->overlap : 0;
            uint64_t a = released & ~(pg - 1), b = (p - keep) & ~(pg - 1);
            if (b > a) {
                madvise((void *)(map + a), (size_t)(b - a), MADV_DONTNEED);
                released = b;
            }
        }
    }
    return DX_OK;
}

int dx_scan_buffer(const dx_db *db, dx_scratch *s, const char *data, uint64_t length,
                   uint64_t base_offset, uint64_t base_line, uint64_t line_start,
                   const dx_options *opt, dx_tally *tally, dx_result *res, dx_error *err) {
    pthread_once(&count_nl_once, pick_count_nl);
    if (err) err->expression = -1;
    if (!db || !s || !tally || !res || (!data && length))
        return set_err(err, DX_ERR_ARG, "dx_scan_buffer: null argument", NULL);
    if (!check_opts(opt)) return set_err(err, DX_ERR_ARG, "dx_scan_buffer: invalid options", NULL);
    if (tally->n_sigs != db->n_sigs) return set_err(err, DX_ERR_ARG, "tally does not fit database", NULL);
    if (line_start > base_offset) line_start = base_offset;
    scan_ctx c = {opt, tally, res, data, base_offset, length, base_offset, base_offset, 0, line_start, base_line, 0};
    int rc = scan_blocks(db, s, &c, base_offset, base_offset + length, NULL, err);
    res->newlines += c.line;
    return rc;
}

/* ---------------------------------------------------------- SIGBUS guard */

static __thread sigjmp_buf *bus_jmp __attribute__((tls_model("initial-exec")));
static struct sigaction prev_bus;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    sigjmp_buf *j = bus_jmp;
    if (j) siglongjmp(*j, 1);
    /* not ours: hand over to whoever was installed before us */
    if (prev_bus.sa_flags & SA_SIGINFO) {
        if (prev_bus.sa_sigaction) prev_bus.sa_sigaction(sig, info, uctx);
        return;
    }
    if (prev_bus.sa_handler == SIG_IGN) return;
    if (prev_bus.sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    prev_bus.sa_handler(sig);
}

static void install_bus_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &prev_bus);
}

/* First line start at or after `p` (p itself when it starts a line), looking
 * no further than `limit` (returned when no newline is found before it).  The
 * search runs in `chunk`-byte steps and drops each searched chunk from the
 * mapping, so aligning inside a very long line does not fault the whole line
 * into memory at once, and stops early when the scan is cancelled. */
static uint64_t align_line(const char *map, uint64_t limit, uint64_t p, uint64_t chunk,
                           volatile int *cancel) {
    if (p == 0) return 0;
    if (p >= limit) return limit;
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    if (chunk < pg) chunk = pg;
    for (uint64_t from = p - 1; from < limit;) {
        if (cancel && *cancel) return limit; /* the caller reports the cancellation */
        uint64_t to = limit - from > chunk ? from + chunk : limit;
        const char *nl = memchr(map + from, '\n', (size_t)(to - from));
        if (nl) return (uint64_t)(nl - map) + 1;
        uint64_t a = from & ~(pg - 1), b = to & ~(pg - 1);
        if (b > a) madvise((void *)(map + a), (size_t)(b - a), MADV_DONTNEED);
        from = to;
    }
    return limit;
}

/* Scan the lines that start in [start, stop) of a file's bytes map[0, size). */
static int scan_region(const dx_db *db, dx_scratch *s, const char *map, uint64_t size,
                       uint64_t start, uint64_t stop, const dx_options *opt, dx_tally *tally,
                       dx_result *res, dx_error *err) {
    int rc = DX_OK;
    /* no line starts in [start, stop) unless a newline precedes stop */
    const uint64_t chunk = opt->release_every ? opt->release_every : opt->max_piece;
    uint64_t a = align_line(map, stop, start, chunk, opt->cancel);
    uint64_t b = a >= stop ? a : stop >= size ? size : align_line(map, size, stop, chunk, opt->cancel);
    res->range_start = a;
    res->range_end = b < a ? a : b;
    scan_ctx c = {opt, tally, res, map, 0, size, a, a, 0, a, 0, 0};
    if (opt->cancel && *opt->cancel) rc = set_err(err, DX_ERR_CANCELLED, "scan cancelled", NULL);
    else if (b > a) rc = scan_blocks(db, s, &c, a, b, map, err);
    res->newlines += c.line;
    return rc;
}

int dx_scan_file(const dx_db *db, dx_scratch *s, const char *path, uint64_t start, uint64_t end,
                 const dx_options *opt, dx_tally *tally, dx_result *res, dx_error *err) {
    pthread_once(&count_nl_once, pick_count_nl);
    pthread_once(&bus_once, install_bus_handler);
    if (err) err->expression = -1;
    if (!db || !s || !path || !tally || !res)
        return set_err(err, DX_ERR_ARG, "dx_scan_file: null argument", NULL);
    if (!check_opts(opt)) return set_err(err, DX_ERR_ARG, "dx_scan_file: invalid options", NULL);
    if (tally->n_sigs != db->n_sigs) return set_err(err, DX_ERR_ARG, "tally does not fit database", NULL);

    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return set_io_err(err, DX_ERR_IO, errno, "open");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return set_io_err(err, DX_ERR_IO, e, "fstat");
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return set_io_err(err, DX_ERR_IO, EISDIR, "open");
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return set_err(err, DX_ERR_NOTREG, "not a regular file (FIFO, socket or device)", NULL);
    }
    const uint64_t size = (uint64_t)st.st_size;
    const uint64_t stop = end > size ? size : end;
    res->file_size = size;
    if (start >= stop || size == 0) {
        close(fd);
        res->range_start = res->range_end = start < size ? start : size;
        return DX_OK;
    }
    if (start == 0 && size <= (uint64_t)DX_READ_WHOLE) {
        /* A small file is read whole into the scratch's buffer: for the many
         * small files of a job directory, mapping, faulting in and unmapping
         * each one costs more than the copy (and more than scanning it). */
        if (s->cap < size) {
            char *nb = realloc(s->buf, (size_t)size);
            if (!nb) {
                close(fd);
                return set_err(err, DX_ERR_NOMEM, "out of memory reading a small file", NULL);
            }
            s->buf = nb;
            s->cap = size;
        }
        uint64_t got = 0;
        while (got < size) {
            ssize_t r = read(fd, s->buf + got, (size_t)(size - got));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                int e = errno;
                close(fd);
                return set_io_err(err, DX_ERR_IO, e, "read");
            }
            if (r == 0) break; /* the file shrank since fstat */
            got += (uint64_t)r;
        }
        close(fd);
        int rc = scan_region(db, s, s->buf, got, start, stop < got ? stop : got, opt, tally, res, err);
        if (rc == DX_OK && got < size)
            rc = set_err(err, DX_ERR_TRUNCATED, "file was truncated while it was being read", NULL);
        return rc;
    }
    char *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping keeps the file; no descriptor outlives this call */
    if (map == MAP_FAILED) return set_io_err(err, DX_ERR_IO, map_errno, "mmap");
    madvise(map, (size_t)size, MADV_SEQUENTIAL);

    int rc = DX_OK;
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1) == 0) {
        bus_jmp = &jb;
        rc = scan_region(db, s, map, size, start, stop, opt, tally, res, err);
        bus_jmp = NULL;
    } else {
        /* SIGBUS: the file shrank under the mapping.  The scratch may be
         * marked in use by the interrupted hs_scan, so replace it. */
        bus_jmp = NULL;
        hs_free_scratch(s->hs);
        s->hs = NULL;
        hs_error_t hrc = hs_alloc_scratch(db->hs, &s->hs);
        rc = set_err(err, DX_ERR_TRUNCATED, "file was truncated while it was being read", NULL);
        if (hrc != HS_SUCCESS) rc = set_hs_err(err, DX_ERR_HS, hrc, "hs_alloc_scratch after SIGBUS");
    }
    munmap(map, (size_t)size);
    return rc;
}
