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

static inline uint64_t fnv(uint64_t h, unsigned char c) { return (h ^ c) * FNV_PRIME; }

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_hex(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static inline int is_word(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static inline int ends_path(unsigned char c) {
    return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == ':' || c == ',' || c == ')' ||
           c == ']' || c == '>' || c == '\r';
}

uint64_t dx_line_template_hash(const char *line_, uint64_t n) {
    const unsigned char *s = (const unsigned char *)line_;
    if (n && s[n - 1] == '\r') n--;
    uint64_t h = FNV_OFFSET;
    uint64_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        int token_start = i == 0 || !is_word(s[i - 1]);
        if (token_start && c == '0' && i + 2 < n && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
            is_hex(s[i + 2])) {
            i += 2;
            while (i < n && is_hex(s[i])) i++;
            h = fnv(h, '#');
            continue;
        }
        if (token_start && is_word(c)) {
            /* long hex tokens with at least one digit: ids, hashes, addresses */
            uint64_t j = i;
            int digit = 0, hex = 1;
            while (j < n && is_word(s[j])) {
                digit |= is_digit(s[j]);
                hex &= is_hex(s[j]);
                j++;
            }
            if (hex && digit && j - i >= 8) {
                i = j;
                h = fnv(h, '#');
                continue;
            }
        }
        if (token_start && c == '/' && i + 1 < n && (is_word(s[i + 1]) || s[i + 1] == '.')) {
            while (i < n && !ends_path(s[i])) i++;
            h = fnv(h, '/');
            continue;
        }
        if (is_digit(c)) {
            /* 12, 12.5, 1,024, 3e-05: one mask per number */
            while (i < n && (is_digit(s[i]) ||
                             ((s[i] == '.' || s[i] == ',') && i + 1 < n && is_digit(s[i + 1])) ||
                             ((s[i] == 'e' || s[i] == 'E') && i + 2 < n &&
                              (s[i + 1] == '-' || s[i + 1] == '+') && is_digit(s[i + 2])) ||
                             ((s[i] == '-' || s[i] == '+') && i > 0 && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
                i++;
            h = fnv(h, '#');
            continue;
        }
        h = fnv(h, c);
        i++;
    }
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
            if (!dx_tset_contains(known, h) && found < cap && dx_tset_add(seen, h) == 1) {
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
