/*
 * denpex_template.c -- line templates for the healthy-baseline comparison.
 *
 * A line's template is the line with its variable parts masked: digit runs
 * (numbers, times, ranks, PIDs), 0x-hex and long hex tokens (addresses,
 * communicator ids, hashes) and absolute paths.  Two runs of the same job
 * print the same templates; the first template a failed run prints that its
 * healthy baseline never printed is evidence even when no signature knows
 * the line.  Templates are 64-bit hashes of the masked line kept in an
 * open-addressing set, so a whole job is compared in one pass.
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

/* The masked stream is collected in a small buffer and hashed 8 bytes at a
 * time (a multiply per byte would cap the pass well below scan speed).  The
 * buffer is only ever hashed in whole words, so the hash depends on the
 * masked bytes alone, never on where the buffer happened to be flushed. */
#define TH_CAP 256
typedef struct {
    unsigned char buf[TH_CAP + 16]; /* room for a 16-byte copy past TH_CAP */
    unsigned o;                     /* bytes in buf, < TH_CAP between calls */
    uint64_t h;
    uint64_t len; /* bytes hashed before buf: tells "a" from "a\0" after padding */
} tmpl_hasher;

#define TH_SEED 0x9e3779b97f4a7c15ULL
#define TH_MUL 0xff51afd7ed558ccdULL

static inline uint64_t load64(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* eight bytes as a little-endian number: byte k is bits 8k..8k+7 */
static inline uint64_t load_le64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return load64(p);
#else
    uint64_t w = 0;
    for (int k = 7; k >= 0; k--) w = w << 8 | p[k];
    return w;
#endif
}

/* xor, odd multiply and xorshift are each invertible: two streams that first
 * differ in a word have different states right after it */
static inline uint64_t th_step(uint64_t h, uint64_t w) {
    h = (h ^ w) * TH_MUL;
    return h ^ (h >> 29);
}

/* hash the whole words of buf and keep the rest (< 8 bytes) at its front */
static void th_flush(tmpl_hasher *t) {
    unsigned k = 0;
    for (; k + 8 <= t->o; k += 8) t->h = th_step(t->h, load64(t->buf + k));
    t->len += k;
    memmove(t->buf, t->buf + k, t->o - k);
    t->o -= k;
}

static inline void th_byte(tmpl_hasher *t, unsigned char c) {
    t->buf[t->o++] = c;
    if (t->o >= TH_CAP) th_flush(t);
}

/* Appends p[0, k); end bounds the line: a short span is copied as a fixed
 * 16 bytes (one or two moves, no loop) only when those are all in the line. */
static inline void th_span(tmpl_hasher *t, const unsigned char *p, uint64_t k,
                           const unsigned char *end) {
    if (k <= 16 && end - p >= 16) {
        memcpy(t->buf + t->o, p, 16);
        t->o += (unsigned)k;
        if (t->o >= TH_CAP) th_flush(t);
        return;
    }
    while (k) {
        unsigned c = TH_CAP - t->o;
        if (c > k) c = (unsigned)k;
        memcpy(t->buf + t->o, p, c);
        t->o += c;
        p += c;
        k -= c;
        if (t->o >= TH_CAP) th_flush(t);
    }
}

static inline uint64_t th_final(tmpl_hasher *t) {
    th_flush(t);
    uint64_t h = t->h;
    if (t->o) {
        memset(t->buf + t->o, 0, 8 - t->o);
        h = th_step(h, load64(t->buf));
    }
    h ^= t->len + t->o;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h ? h : 1;
}

/* Character classes by table lookup: one load per test. */
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
static inline int is_word(unsigned char c) { return CLS[c] & C_WORD; }

/* SWAR: eight bytes tested at once, with a mark (0x80) in each byte that
 * passes.  Each byte's sum stays below 0x100, so no carry crosses into its
 * neighbour and every mark is exact. */
#define ONES 0x0101010101010101ULL
#define HIGH (ONES << 7)

/* bytes of w in [lo, hi] (lo <= hi < 0x80) */
static inline uint64_t in_range(uint64_t w, unsigned lo, unsigned hi) {
    uint64_t x = w & ~HIGH;
    return (x + ONES * (0x80 - lo)) & ~(x + ONES * (0x7f - hi)) & ~w & HIGH;
}

/* the byte index of the lowest mark of a nonzero mark word (load_le64) */
static inline unsigned first_mark(uint64_t m) {
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(m) >> 3;
#else
    unsigned k = 0;
    while (!(m & 0x80)) m >>= 8, k++;
    return k;
#endif
}

/* Only a digit or '/' can start a masked part, and those are the bytes
 * 0x2f..0x39: the first of them in s[i, n), or n. */
static inline uint64_t next_special(const unsigned char *s, uint64_t i, uint64_t n) {
    for (; i + 8 <= n; i += 8) {
        uint64_t m = in_range(load_le64(s + i), '/', '9');
        if (m) return i + first_mark(m);
    }
    for (; i < n; i++)
        if (s[i] - 0x2fu < 11u) return i;
    return n;
}

/* the end of the run of word bytes at s[i] (short runs: a byte loop beats
 * eight-byte tests here) */
static inline uint64_t word_end(const unsigned char *s, uint64_t i, uint64_t n) {
    while (i < n && is_word(s[i])) i++;
    return i;
}

/* The end of the number starting at the digit s[i]: digits, with '.' or ','
 * between digits (12.5, 41,230) and an exponent e-5 / E+05 (3e-05). */
static inline uint64_t number_end(const unsigned char *s, uint64_t i, uint64_t n) {
    for (;;) {
        while (i < n && is_digit(s[i])) i++;
        if (i + 1 < n && (s[i] == '.' || s[i] == ',') && is_digit(s[i + 1]))
            i += 2;
        else if (i + 2 < n && (s[i] == 'e' || s[i] == 'E') && (s[i + 1] == '-' || s[i + 1] == '+') &&
                 is_digit(s[i + 2]))
            i += 3;
        else
            return i;
    }
}

/* A word (maximal [0-9A-Za-z_] run) holding a digit is masked whole when it
 * is a 0x-hex number or a hex id of 8 or more bytes (addresses, hashes). */
static inline int hex_word(const unsigned char *s, uint64_t w, uint64_t j) {
    if (s[w] == '0' && j - w > 2 && (s[w + 1] == 'x' || s[w + 1] == 'X')) {
        uint64_t k = w + 2;
        while (k < j && (CLS[s[k]] & C_HEX)) k++;
        if (k == j) return 1;
    }
    if (j - w < 8) return 0;
    while (w < j && (CLS[s[w]] & C_HEX)) w++;
    return w == j;
}

/* The fast path, eight bytes at a time: unmasked text is skipped and a
 * number that is a whole word of digits ending inside the eight bytes (most
 * of a log line's numbers: 2024-05-01 14:10:44 step=12) is masked without
 * leaving the word's marks.  Returns where the general path must go on: a
 * '/' or a digit whose word or number is not that simple, or the start of
 * the last, partial, eight bytes. */
static inline uint64_t skim(const unsigned char *s, uint64_t i, uint64_t n, uint64_t *v,
                            tmpl_hasher *th) {
    for (; i + 8 <= n; i += 8) {
        uint64_t a = load_le64(s + i);
        uint64_t sp = in_range(a, '/', '9'), nd = ~in_range(a, '0', '9') & HIGH;
        while (sp) {
            unsigned k = first_mark(sp);
            uint64_t q = i + k, r;
            if (s[q] == '/' || (q > 0 && is_word(s[q - 1]))) return q;
            uint64_t e = nd & (~0ULL << 8 * k); /* the non-digits from q on */
            if (!e) return q;                   /* digits run on past these 8 */
            r = i + first_mark(e);
            /* the word goes on (rank3x, 12e-5), or the number does (12.5) */
            if (is_word(s[r]) || ((s[r] == '.' || s[r] == ',') && r + 1 < n && is_digit(s[r + 1])))
                return q;
            th_span(th, s + *v, q - *v, s + n);
            th_byte(th, '#');
            *v = r;
            sp &= ~0ULL << 8 * (r - i);
        }
    }
    return i;
}

/* The line is scanned for the next digit or '/'; everything before it is
 * unmasked text, hashed as one span.  A digit's word is masked whole when it
 * is a hex id, and otherwise hashed with each number masked: rank3 -> rank#,
 * 12.5 -> #.  A '/' that starts a word-like path after a non-word byte masks
 * the path up to the next separator. */
uint64_t dx_line_template_hash(const char *line_, uint64_t n) {
    /* the table is built once; a racing first build writes the same bytes */
    if (!__atomic_load_n(&cls_ready, __ATOMIC_ACQUIRE)) init_cls();
    const unsigned char *s = (const unsigned char *)line_;
    if (n && s[n - 1] == '\r') n--;
    const unsigned char *end = s + n;
    tmpl_hasher th;
    th.o = 0;
    th.h = TH_SEED;
    th.len = 0;
    /* [v, i) is unmasked text not hashed yet.  At the top of the loop s[i]
     * never continues a word that started before i. */
    uint64_t v = 0, i = 0;
    while ((i = next_special(s, skim(s, i, n, &v, &th), n)) < n) {
        if (s[i] == '/') {
            if (i + 1 < n && (is_word(s[i + 1]) || s[i + 1] == '.') && (i == 0 || !is_word(s[i - 1]))) {
                th_span(&th, s + v, i - v, end);
                th_byte(&th, '/');
                while (i < n && !(CLS[s[i]] & C_PATHEND)) i++;
                v = i;
            } else {
                i++;
            }
            continue;
        }
        /* s[i] is a digit in the word [w, j) */
        uint64_t w = i, j;
        while (w > v && is_word(s[w - 1])) w--;
        j = word_end(s, i, n);
        if (hex_word(s, w, j)) {
            th_span(&th, s + v, w - v, end);
            th_byte(&th, '#');
            i = v = j;
            continue;
        }
        /* the word's letters before s[i] stay in the unmasked span */
        for (;;) {
            th_span(&th, s + v, i - v, end);
            th_byte(&th, '#');
            i = number_end(s, i, n);
            /* a number can run past its word (12.5, 3e-05): the word goes on
             * from there, its numbers masked but never as a hex id */
            if (i > j) j = word_end(s, i, n);
            v = i;
            while (i < j && !is_digit(s[i])) i++;
            if (i == j) break;
        }
    }
    th_span(&th, s + v, n - v, end);
    return th_final(&th);
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
