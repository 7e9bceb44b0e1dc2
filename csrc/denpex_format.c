/*
 * denpex_format.c -- `denpex scan`'s text rows, written straight from the
 * Arrow buffers of the match table.
 *
 * A row prints as `file:line:signature:text\n`.  Log text goes to a terminal,
 * so control characters in it are escaped as denpex_fast.textsafe does (C0
 * except tab, DEL, C1, U+2028/U+2029; `\n` and `\r` spelled so).  Formatting
 * millions of rows in Python costs more than scanning the bytes they came
 * from; here it is one pass at memory speed into a caller-owned buffer, so
 * output streams per batch and memory does not grow with it.
 */
#include "denpex_scan.h"

#include <string.h>

static const char HEX[] = "0123456789abcdef";

/* Copy a field and its separator; the caller checked the room. */
static inline char *put(char *o, const char *src, size_t n, char sep) {
    memcpy(o, src, n);
    o += n;
    *o++ = sep;
    return o;
}

static inline char *put_u64(char *o, uint64_t v) {
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *o++ = tmp[--n];
    return o;
}

/* Text with terminal controls escaped: at most 4 bytes out per byte in. */
static char *put_text(char *o, const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* the common run: printable ASCII (and tab), or UTF-8 lead/continuation
         * bytes that are not the start of a C1 or line-separator sequence */
        size_t j = i;
        /* eight bytes at a time while all are printable ASCII (0x20..0x7e):
         * most log text, and a byte loop of three tests each is the cost */
        while (j + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + j, 8);
            const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
            uint64_t del = w ^ (0x7f * ones);
            if (((w | ((w - 0x20 * ones) & ~w) | ((del - ones) & ~del)) & highs) != 0)
                break;
            j += 8;
        }
        while (j < n) {
            unsigned char c = s[j];
            if (c < 0x20 ? c != '\t' : c == 0x7f)
                break;
            if (c == 0xc2 && j + 1 < n && s[j + 1] >= 0x80 && s[j + 1] <= 0x9f)
                break;
            if (c == 0xe2 && j + 2 < n && s[j + 1] == 0x80 && (s[j + 2] == 0xa8 || s[j + 2] == 0xa9))
                break;
            j++;
        }
        memcpy(o, s + i, j - i);
        o += j - i;
        if (j >= n)
            break;
        unsigned char c = s[j];
        *o++ = '\\';
        if (c == '\n') {
            *o++ = 'n';
            i = j + 1;
        } else if (c == '\r') {
            *o++ = 'r';
            i = j + 1;
        } else if (c == 0xc2) { /* U+0080..U+009F as \xNN */
            unsigned char v = s[j + 1];
            *o++ = 'x';
            *o++ = HEX[v >> 4];
            *o++ = HEX[v & 15];
            i = j + 2;
        } else if (c == 0xe2) { /* U+2028 / U+2029 */
            memcpy(o, s[j + 2] == 0xa8 ? "u2028" : "u2029", 5);
            o += 5;
            i = j + 3;
        } else {
            *o++ = 'x';
            *o++ = HEX[c >> 4];
            *o++ = HEX[c & 15];
            i = j + 1;
        }
    }
    return o;
}

uint64_t dx_format_rows(uint64_t n_rows, const int32_t *file_idx, const int32_t *file_offsets,
                        const char *file_data, const uint64_t *line, const int32_t *sig_idx,
                        const int32_t *sig_offsets, const char *sig_data,
                        const int32_t *text_offsets, const char *text, char *out, uint64_t cap,
                        uint64_t *written) {
    char *o = out;
    char *end = out + cap;
    uint64_t r = 0;
    for (; r < n_rows; r++) {
        int32_t f = file_idx[r], g = sig_idx[r];
        size_t flen = (size_t)(file_offsets[f + 1] - file_offsets[f]);
        size_t slen = (size_t)(sig_offsets[g + 1] - sig_offsets[g]);
        size_t tlen = (size_t)(text_offsets[r + 1] - text_offsets[r]);
        /* worst case: separators, 20 digits, every text byte escaped to 4 */
        if ((uint64_t)(end - o) < flen + slen + 4 * tlen + 24)
            break;
        o = put(o, file_data + file_offsets[f], flen, ':');
        o = put_u64(o, line[r]);
        *o++ = ':';
        o = put(o, sig_data + sig_offsets[g], slen, ':');
        o = put_text(o, (const unsigned char *)text + text_offsets[r], tlen);
        *o++ = '\n';
    }
    *written = (uint64_t)(o - out);
    return r;
}
