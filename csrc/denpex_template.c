/*
 * denpex_template.c -- line templates for the healthy-baseline comparison.
 *
 * A line's template is the line with its variable parts masked: digit runs
 * (numbers, times, ranks, PIDs), 0x-hex and long hex tokens (addresses,
 * communicator ids, hashes) and absolute paths.  Two runs of the same job
 * print the same templates; the first template a failed run prints that its
 * healthy baseline never printed is evidence even when no signature knows
 * the line.  Templates are 64-bit FNV-1a hashes kept in an open-addressing
 * set, so a whole job is compared in one pass at close to memory speed.
 */
#define _GNU_SOURCE
#include "denpex_scan.h"

#include <stdlib.h>
#include <string.h>

struct dx_tset {
    uint64_t *slots; /* 0 = empty; stored hashes are never 0 */
    uint64_t cap;    /* power of two */
    uint64_t size;
};

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* Masked bytes are collected in a small buffer and hashed 8 bytes at a time:
 * a multiply per byte (FNV) would cap the pass well below scan speed. */
typedef struct {
    unsigned char buf[256];
    unsigned len;
    uint64_t h;
} tmpl_hasher;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return x;
}

static void th_flush(tmpl_hasher *t) {
    unsigned k = 0;
    for (; k + 8 <= t->len; k += 8) {
        uint64_t w;
        memcpy(&w, t->buf + k, 8);
        t->h = (t->h ^ w) * FNV_PRIME;
        t->h ^= t->h >> 29;
    }
    for (; k < t->len; k++) t->h = (t->h ^ t->buf[k]) * FNV_PRIME;
    t->len = 0;
}

static inline void fnv_put(tmpl_hasher *t, unsigned char c) {
    if (t->len == sizeof t->buf) th_flush(t);
    t->buf[t->len++] = c;
}

/* Character classes by table lookup: the pass is one branchy loop per byte,
 * and a table keeps each test to one load. */
enum { C_WORD = 1, C_DIGIT = 2, C_HEX = 4, C_PATHEND = 8 };
static unsigned char CLS[256];
static int cls_ready;

static void init_cls(void) {
    for (int c = 0; c < 256; c++) {
        unsigned char v = 0;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
            v |= C_WORD;
        if (c >= '0' && c <= '9') v |= C_DIGIT | C_HEX;
        if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) v |= C_HEX;
        if (c == ' ' || c == '\t' || c == '"' || c == '\'' || c == ':' || c == ',' || c == ')' ||
            c == ']' || c == '>' || c == '\r')
            v |= C_PATHEND;
        CLS[c] = v;
    }
    __atomic_store_n(&cls_ready, 1, __ATOMIC_RELEASE);
}

static inline int is_digit(unsigned char c) { return CLS[c] & C_DIGIT; }
static inline int is_hex(unsigned char c) { return CLS[c] & C_HEX; }
static inline int is_word(unsigned char c) { return CLS[c] & C_WORD; }
static inline int ends_path(unsigned char c) { return CLS[c] & C_PATHEND; }

/* Each byte is looked at about once: a word is scanned as a run, then
 * either masked whole (hex ids) or hashed with its digit runs masked. */
uint64_t dx_line_template_hash(const char *line_, uint64_t n) {
    /* the table is built once; a racing first build writes the same bytes */
    if (!__atomic_load_n(&cls_ready, __ATOMIC_ACQUIRE)) init_cls();
    const unsigned char *s = (const unsigned char *)line_;
    if (n && s[n - 1] == '\r') n--;
    tmpl_hasher th;
    th.len = 0;
    th.h = FNV_OFFSET;
    uint64_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (is_word(c)) {
            uint64_t j = i;
            int digit = 0, hex = 1;
            unsigned all = C_HEX, any = 0;
            while (j < n && (CLS[s[j]] & C_WORD)) {
                all &= CLS[s[j]];
                any |= CLS[s[j]];
                j++;
            }
            digit = any & C_DIGIT;
            hex = all & C_HEX;
            int ox = c == '0' && j - i > 2 && (s[i + 1] == 'x' || s[i + 1] == 'X');
            if (ox) {
                uint64_t k = i + 2;
                while (k < j && is_hex(s[k])) k++;
                ox = k == j;
            }
            if (ox || (hex && digit && j - i >= 8)) {
                fnv_put(&th, '#'); /* 0x-hex, long hex ids, hashes, addresses */
                i = j;
                continue;
            }
            /* the word with each number masked: rank3 -> rank#, 12.5 -> # */
            while (i < j) {
                if (is_digit(s[i])) {
                    while (i < n && (is_digit(s[i]) ||
                                     ((s[i] == '.' || s[i] == ',') && i + 1 < n && is_digit(s[i + 1])) ||
                                     ((s[i] == 'e' || s[i] == 'E') && i + 2 < n &&
                                      (s[i + 1] == '-' || s[i + 1] == '+') && is_digit(s[i + 2])) ||
                                     ((s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
                        i++;
                    fnv_put(&th, '#');
                    if (i > j) j = i; /* a number ran past the word (12.5, 3e-05) */
                    while (j < n && is_word(s[j])) j++;
                } else {
                    fnv_put(&th, s[i]);
                    i++;
                }
            }
            continue;
        }
        if (c == '/' && i + 1 < n && (is_word(s[i + 1]) || s[i + 1] == '.') &&
            (i == 0 || !is_word(s[i - 1]))) {
            while (i < n && !ends_path(s[i])) i++;
            fnv_put(&th, '/');
            continue;
        }
        fnv_put(&th, c);
        i++;
    }
    th_flush(&th);
    uint64_t h = mix64(th.h);
    return h ? h : 1;
}

dx_tset *dx_tset_new(void) {
    dx_tset *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cap = 1024;
    t->slots = calloc(t->cap, sizeof(uint64_t));
    if (!t->slots) {
        free(t);
        return NULL;
    }
    return t;
}

void dx_tset_free(dx_tset *t) {
    if (!t) return;
    free(t->slots);
    free(t);
}

uint64_t dx_tset_size(const dx_tset *t) { return t ? t->size : 0; }

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

int dx_tset_contains(const dx_tset *t, uint64_t h) {
    if (!t) return 0;
    uint64_t mask = t->cap - 1, i = mix(h) & mask;
    while (t->slots[i]) {
        if (t->slots[i] == h) return 1;
        i = (i + 1) & mask;
    }
    return 0;
}

static int tset_grow(dx_tset *t) {
    uint64_t cap = t->cap * 2, mask = cap - 1;
    uint64_t *slots = calloc(cap, sizeof(uint64_t));
    if (!slots) return -1;
    for (uint64_t k = 0; k < t->cap; k++) {
        uint64_t h = t->slots[k];
        if (!h) continue;
        uint64_t i = mix(h) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = h;
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* 1 when added, 0 when present, -1 on allocation failure */
int dx_tset_add(dx_tset *t, uint64_t h) {
    if (!t) return -1;
    if (2 * (t->size + 1) > t->cap && tset_grow(t) != 0) return -1;
    uint64_t mask = t->cap - 1, i = mix(h) & mask;
    while (t->slots[i]) {
        if (t->slots[i] == h) return 0;
        i = (i + 1) & mask;
    }
    t->slots[i] = h;
    t->size++;
    return 1;
}

int dx_tset_merge(dx_tset *dst, const dx_tset *src) {
    if (!dst || !src) return DX_ERR_ARG;
    for (uint64_t k = 0; k < src->cap; k++) {
        if (src->slots[k] && dx_tset_add(dst, src->slots[k]) < 0) return DX_ERR_NOMEM;
    }
    return DX_OK;
}

uint64_t dx_tset_export(const dx_tset *t, uint64_t *out, uint64_t cap) {
    /* the stored hashes, in slot order; returns how many were written (at
     * most cap: call with cap >= dx_tset_size for all of them) */
    if (!t || !out) return 0;
    uint64_t n = 0;
    for (uint64_t k = 0; k < t->cap && n < cap; k++) {
        if (t->slots[k]) out[n++] = t->slots[k];
    }
    return n;
}

int dx_tset_add_many(dx_tset *t, const uint64_t *hashes, uint64_t n) {
    /* a zero hash is never stored (it marks an empty slot): refused */
    if (!t || (n && !hashes)) return DX_ERR_ARG;
    for (uint64_t k = 0; k < n; k++) {
        if (!hashes[k]) return DX_ERR_ARG;
        if (dx_tset_add(t, hashes[k]) < 0) return DX_ERR_NOMEM;
    }
    return DX_OK;
}

int dx_tset_add_lines(dx_tset *t, const char *data, uint64_t length) {
    uint64_t p = 0;
    while (p < length) {
        const char *nl = memchr(data + p, '\n', (size_t)(length - p));
        uint64_t end = nl ? (uint64_t)(nl - data) : length;
        if (dx_tset_add(t, dx_line_template_hash(data + p, end - p)) < 0) return DX_ERR_NOMEM;
        p = end + 1;
    }
    return DX_OK;
}

uint64_t dx_new_templates(const dx_tset *known, dx_tset *seen, const char *data, uint64_t length,
                          uint64_t base_offset, uint64_t base_line, uint64_t *out_line,
                          uint64_t *out_offset, uint64_t *out_hash, uint64_t cap,
                          uint64_t *newlines) {
    uint64_t p = 0, line = base_line, found = 0;
    while (p < length) {
        const char *nl = memchr(data + p, '\n', (size_t)(length - p));
        uint64_t end = nl ? (uint64_t)(nl - data) : length;
        line++;
        if (end > p) { /* empty lines carry no evidence */
            uint64_t h = dx_line_template_hash(data + p, end - p);
            int added = 0;
            if (!dx_tset_contains(known, h) && found < cap) {
                added = dx_tset_add(seen, h);
                if (added < 0) return UINT64_MAX; /* out of memory */
            }
            if (added == 1) {
                out_line[found] = line;
                out_offset[found] = base_offset + p;
                out_hash[found] = h;
                found++;
            }
        }
        if (!nl) break;
        p = end + 1;
    }
    if (newlines) *newlines = line - base_line - (length && data[length - 1] != '\n' ? 1 : 0);
    return found;
}
