/*
 * denpex_scan.h -- the whole C API of the denpex_fast native scanner.
 *
 * The cffi build script (csrc/build_ffi.py) feeds everything between the
 * CDEF markers to ffibuilder.cdef(), so this header is the single place the
 * Python/C boundary is declared.  Keep that region cdef-clean: plain C
 * declarations, stdint types, integer #defines, no other preprocessor logic.
 *
 * Model:
 *   dx_db       a compiled Hyperscan block-mode database (one per pattern set)
 *   dx_scratch  per-thread Hyperscan scratch; never shared between threads
 *   dx_tally    per-file state: de-duplication, row caps and exact counts
 *   dx_result   column buffers (one row per (line, signature)) that Python
 *               wraps zero-copy as Arrow buffers
 * Every function returns DX_OK or a negative DX_ERR_* status and fills a
 * caller-provided dx_error; nothing here raises signals or aborts.
 */
#ifndef DENPEX_SCAN_H
#define DENPEX_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* CDEF BEGIN */
#define DX_OK 0
#define DX_ERR_NOMEM -1      /* allocation failed */
#define DX_ERR_COMPILE -2    /* libhs refused a pattern; see dx_error.expression */
#define DX_ERR_HS -3         /* other libhs error; see dx_error.hs_error */
#define DX_ERR_IO -4         /* open/stat/mmap failed; see dx_error.err_no */
#define DX_ERR_TRUNCATED -5  /* the file shrank while mapped (SIGBUS caught) */
#define DX_ERR_DB -6         /* a serialized database was rejected */
#define DX_ERR_ARG -7        /* invalid argument */
#define DX_ERR_CANCELLED -8  /* *cancel became non-zero */
#define DX_ERR_NOTREG -9     /* not a regular file (FIFO, device, socket) */
/* dx_scan_file reads a file of at most this many bytes whole (from offset 0)
 * into the scratch's buffer instead of mapping it */
#define DX_READ_WHOLE 8388608

typedef struct dx_db dx_db;
typedef struct dx_scratch dx_scratch;

typedef struct {
    int status;          /* DX_* status of the failing call */
    int hs_error;        /* libhs return code, when status is DX_ERR_HS/DB */
    int err_no;          /* errno, when status is DX_ERR_IO */
    int expression;      /* failing expression index for DX_ERR_COMPILE, else -1 */
    char message[512];   /* human-readable reason (libhs message, strerror) */
} dx_error;

typedef struct {
    uint64_t max_rows_per_sig; /* rows kept per (tally, signature); the count stays exact */
    const uint64_t *sig_caps;  /* optional, one per signature: rows kept, instead of max_rows_per_sig */
    uint32_t max_text;         /* bytes of matched-line text kept per row */
    uint32_t file_index;       /* value written to the `file` column */
    uint32_t strip_ansi;       /* non-zero: terminal colour/cursor codes (ESC [ ... letter) are
                                  left out of the bytes scanned and of `text`; line numbers and
                                  `offset` stay the file's, match_end - offset indexes `text`.
                                  A line longer than max_piece keeps them after its first piece */
    uint64_t block_size;       /* scan granularity; blocks end at a newline */
    uint64_t max_piece;        /* lines longer than this are scanned in overlapping pieces */
    uint64_t overlap;          /* bytes re-scanned between pieces of one long line */
    uint64_t release_every;    /* drop mapped pages from RSS after this many bytes */
    volatile int *cancel;      /* optional: scanning stops when *cancel != 0 */
} dx_options;

typedef struct {
    uint32_t n_sigs;
    uint64_t *last_line;  /* per signature: last line reported + 1 (0 = none) */
    uint64_t *kept;       /* per signature: rows stored */
    uint64_t *count;      /* per signature: distinct matching lines seen */
    uint64_t any_last;    /* last line matched by any signature + 1 (0 = none) */
    uint64_t any_count;   /* distinct lines matched by any signature (grep -c) */
} dx_tally;

typedef struct {
    uint64_t n_rows;
    uint64_t cap_rows;
    uint64_t *line;          /* 1-based line number (plus the base passed in) */
    uint64_t *offset;        /* byte offset of the line start */
    uint64_t *match_end;     /* Hyperscan's end offset (first match in the line) */
    uint32_t *sig;           /* signature index */
    uint32_t *file;          /* dx_options.file_index */
    int32_t *text_offsets;   /* Arrow string offsets, n_rows + 1 entries */
    char *text;              /* Arrow string data, valid UTF-8 */
    uint64_t text_len;
    uint64_t text_cap;
    uint64_t text_dropped;   /* rows whose text was dropped (2 GiB string limit) */
    uint64_t newlines;       /* newlines counted in the scanned range */
    uint64_t scanned;        /* bytes scanned */
    uint64_t range_start;    /* dx_scan_file: the newline-aligned range scanned */
    uint64_t range_end;
    uint64_t file_size;      /* dx_scan_file: size seen by fstat */
} dx_result;

const char *dx_hs_version(void);
int dx_platform_supported(void);
/* A string naming the CPU features the database was tuned for (cache key). */
int dx_platform_key(char *buf, size_t len);

int dx_compile(const char *const *expressions, const unsigned int *flags,
               const unsigned int *ids, unsigned int count, unsigned int n_sigs,
               dx_db **out, dx_error *err);
int dx_serialize(const dx_db *db, char **bytes, size_t *length, dx_error *err);
void dx_bytes_free(char *bytes);
int dx_deserialize(const char *bytes, size_t length, unsigned int n_sigs,
                   dx_db **out, dx_error *err);
unsigned int dx_db_sigs(const dx_db *db);
void dx_db_free(dx_db *db);

int dx_scratch_new(const dx_db *db, dx_scratch **out, dx_error *err);
void dx_scratch_free(dx_scratch *scratch);

dx_tally *dx_tally_new(uint32_t n_sigs);
void dx_tally_reset(dx_tally *tally);
void dx_tally_free(dx_tally *tally);

dx_result *dx_result_new(void);
void dx_result_free(dx_result *result);
/* While on (calls nest), freed results keep up to 96 MiB of column buffers
 * for the next dx_result_new: a scan that hands each batch on and drops it
 * reuses memory instead of faulting fresh pages in.  The last off returns
 * the kept buffers to the OS.  dx_result_reuse_bytes: capacity kept now. */
void dx_result_reuse(int on);
uint64_t dx_result_reuse_bytes(void);

/* Scan bytes that begin at a line boundary, or continue a line that began at
 * absolute offset `line_start` (a long line cut by the caller).  Offsets are
 * base_offset + index; lines are base_line + 1 + newlines before the match. */
int dx_scan_buffer(const dx_db *db, dx_scratch *scratch, const char *data,
                   uint64_t length, uint64_t base_offset, uint64_t base_line,
                   uint64_t line_start, const dx_options *opt, dx_tally *tally,
                   dx_result *result, dx_error *err);

/* Scan the lines of a regular file that start in [start, end) (byte offsets
 * aligned forward to line starts) through a private read-only mapping.
 * Line numbers are relative to the aligned start (the caller adds the
 * newlines of earlier ranges).  end = UINT64_MAX means end of file. */
int dx_scan_file(const dx_db *db, dx_scratch *scratch, const char *path,
                 uint64_t start, uint64_t end, const dx_options *opt,
                 dx_tally *tally, dx_result *result, dx_error *err);

/* Count '\n' bytes (exposed for tests and benchmarks). */
uint64_t dx_count_newlines(const char *data, uint64_t length);
/* Copy with invalid UTF-8 replaced by U+FFFD; dst needs 3 * length bytes. */
uint64_t dx_utf8_sanitize(const char *src, uint64_t length, char *dst);
/* Line templates (csrc/denpex_template.c): lines with numbers, hex ids and
 * absolute paths masked, hashed to 64 bits, kept in a set. */
typedef struct dx_tset dx_tset;
dx_tset *dx_tset_new(void);
void dx_tset_free(dx_tset *set);
uint64_t dx_tset_size(const dx_tset *set);
int dx_tset_add(dx_tset *set, uint64_t hash);
int dx_tset_contains(const dx_tset *set, uint64_t hash);
/* Add every hash of src to dst: DX_OK, DX_ERR_NOMEM, or DX_ERR_ARG (a NULL set). */
int dx_tset_merge(dx_tset *dst, const dx_tset *src);
/* The stored hashes (slot order) into out, at most cap; returns how many. */
uint64_t dx_tset_export(const dx_tset *set, uint64_t *out, uint64_t cap);
/* Add n hashes (none may be 0): DX_OK, DX_ERR_NOMEM or DX_ERR_ARG. */
int dx_tset_add_many(dx_tset *set, const uint64_t *hashes, uint64_t n);
/* Add the template of every line of data (split at '\n'). */
int dx_tset_add_lines(dx_tset *set, const char *data, uint64_t length);
/* Lines of data whose template is neither in `known` nor already in `seen`:
 * each is added to `seen` and reported (1-based line counted from base_line,
 * absolute offset, hash) until `cap` are found; *newlines gets the number of
 * newlines in data.  Returns the number reported, or UINT64_MAX when `seen`
 * could not grow (out of memory; what was reported so far is lost). */
uint64_t dx_new_templates(const dx_tset *known, dx_tset *seen, const char *data, uint64_t length,
                          uint64_t base_offset, uint64_t base_line, uint64_t *out_line,
                          uint64_t *out_offset, uint64_t *out_hash, uint64_t cap,
                          uint64_t *newlines);
uint64_t dx_line_template_hash(const char *line, uint64_t length);
/* Text rows of `denpex scan` (csrc/denpex_format.c): `file:line:sig:text\n`
 * per row, files and signatures given as Arrow dictionary indices into
 * string arrays, text as an Arrow string array; terminal controls in the
 * text escaped.  Formats rows in order while they fit in `cap` bytes;
 * returns how many, *written the bytes. */
uint64_t dx_format_rows(uint64_t n_rows, const int32_t *file_idx, const int32_t *file_offsets,
                        const char *file_data, const uint64_t *line, const int32_t *sig_idx,
                        const int32_t *sig_offsets, const char *sig_data,
                        const int32_t *text_offsets, const char *text, char *out, uint64_t cap,
                        uint64_t *written);
/* CDEF END */

#endif /* DENPEX_SCAN_H */
