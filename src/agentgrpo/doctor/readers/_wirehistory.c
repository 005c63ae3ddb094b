/* The HistoryRecord bodies of a W&B run file decoded in one pass (optional; `fasthistory` reads them with
 * protobuf and numpy where this extension is not built).
 *
 * history(joined, offsets) walks each body (body i from offsets[i] to offsets[i + 1], int64) as protobuf:
 * field 1 (item: key = 1 or nested_key = 2, value_json = 16) and field 2 (step: num = 1); unknown fields are
 * skipped as protobuf skips them. Each item must have exactly one key (a key, or a one-part nested key; the
 * same kind in every item) and one value, each body exactly one step. Returns None when anything is not of
 * that shape (then the caller reads the bodies its own way), else (keys in the order first logged, each
 * item's key number as int64 bytes, each value as float64 bytes, each value's kind as uint8 bytes: 0 a JSON
 * integer of at most 15 digits, 1 another JSON number or NaN/Infinity/-Infinity, 2 anything else, the list of
 * the texts of kind 2, the items per body as int64 bytes, each body's step as int64 bytes). Numbers are read
 * by Python's own float parser (PyOS_string_to_double), as float() and json read them.
 *
 * chunks(data) walks a whole W&B run file's LevelDB framing as `wandbframes.chunks` does (32 KiB blocks, a
 * 7-byte header per chunk: crc32 of type + data, length, type): (start, end, type) of every chunk's data as
 * int64 bytes, every crc32 checked; None where that walk gives None (cut short, zeros, a bad type or crc).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && LDBL_MANT_DIG == 64
#define EXACT_SHORT 1
static const long double POW10[] = {1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L, 1e8L, 1e9L, 1e10L, 1e11L,
    1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L,
    1e27L};

/* A decimal m * 10**e (m < 2**64, |e| <= 27) correctly rounded to a double without a big-number parse: m and
 * 10**|e| (5**27 < 2**64) are exact in x87 extended precision, so the one product or quotient there is
 * rounded once to 64 bits; rounding that to 53 bits is the correct rounding of the exact value unless it
 * lies exactly on a midpoint between two doubles (its low 11 bits 0x400), when 0 is returned. */
static int short_decimal(uint64_t m, int e, int negative, double *out) {
    if (m == 0) { *out = negative ? -0.0 : 0.0; return 1; }
    long double q = e >= 0 ? (long double)m * POW10[e] : (long double)m / POW10[-e];
    uint64_t bits;
    memcpy(&bits, &q, sizeof(bits));  /* the 64-bit significand of the x87 format */
    if ((bits & 0x7FF) == 0x400) return 0;
    double d = (double)q;
    *out = negative ? -d : d;
    return 1;
}
#endif

typedef struct {
    const uint8_t *p;
    Py_ssize_t len;
} span_t;

typedef struct {
    span_t *keys;    /* distinct keys, in the order first seen */
    Py_ssize_t n, cap;
    Py_ssize_t *slots;  /* open addressing: index into keys, -1 empty */
    Py_ssize_t n_slots;
} table_t;

static int varint(const uint8_t *p, Py_ssize_t end, Py_ssize_t *i, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*i >= end) return -1;
        uint8_t b = p[(*i)++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) { *out = v; return 0; }
    }
    return -1;
}

/* Skips one field of wire type `wire` (protobuf's handling of an unknown field); -1 on a malformed one. */
static int skip(const uint8_t *p, Py_ssize_t end, Py_ssize_t *i, unsigned wire) {
    uint64_t v;
    switch (wire) {
    case 0: return varint(p, end, i, &v);
    case 1: if (end - *i < 8) return -1; *i += 8; return 0;
    case 5: if (end - *i < 4) return -1; *i += 4; return 0;
    case 2:
        if (varint(p, end, i, &v) || v > (uint64_t)(end - *i)) return -1;
        *i += (Py_ssize_t)v;
        return 0;
    default: return -1;
    }
}

static uint64_t hash(span_t s) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t k = 0; k < s.len; k++) h = (h ^ s.p[k]) * 1099511628211ULL;
    return h;
}

/* The key's number (adding it when new); -1 when out of memory. */
static Py_ssize_t intern(table_t *t, span_t s) {
    if ((t->n + 1) * 2 > t->n_slots) {
        Py_ssize_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
        Py_ssize_t *slots = PyMem_Malloc(n_slots * sizeof(Py_ssize_t));
        if (!slots) return -1;
        for (Py_ssize_t k = 0; k < n_slots; k++) slots[k] = -1;
        for (Py_ssize_t k = 0; k < t->n; k++) {
            Py_ssize_t at = (Py_ssize_t)(hash(t->keys[k]) & (uint64_t)(n_slots - 1));
            while (slots[at] >= 0) at = (at + 1) & (n_slots - 1);
            slots[at] = k;
        }
        PyMem_Free(t->slots);
        t->slots = slots;
        t->n_slots = n_slots;
    }
    Py_ssize_t at = (Py_ssize_t)(hash(s) & (uint64_t)(t->n_slots - 1));
    while (t->slots[at] >= 0) {
        span_t k = t->keys[t->slots[at]];
        if (k.len == s.len && memcmp(k.p, s.p, s.len) == 0) return t->slots[at];
        at = (at + 1) & (t->n_slots - 1);
    }
    if (t->n == t->cap) {
        Py_ssize_t cap = t->cap ? t->cap * 2 : 32;
        span_t *keys = PyMem_Realloc(t->keys, cap * sizeof(span_t));
        if (!keys) return -1;
        t->keys = keys;
        t->cap = cap;
    }
    t->keys[t->n] = s;
    t->slots[at] = t->n;
    return t->n++;
}

static int digits(const uint8_t *p, Py_ssize_t len, Py_ssize_t *i) {
    Py_ssize_t start = *i;
    while (*i < len && p[*i] >= '0' && p[*i] <= '9') (*i)++;
    return *i > start;
}

/* A value's kind (0 integer of at most 15 digits, 1 other number, 2 anything else) and, for 0 and 1, its
 * number; -2 when Python's parser fails (an error is set). */
static int number(const uint8_t *p, Py_ssize_t len, double *out) {
    if (len == 3 && memcmp(p, "NaN", 3) == 0) { *out = Py_NAN; return 1; }
    if (len == 8 && memcmp(p, "Infinity", 8) == 0) { *out = Py_HUGE_VAL; return 1; }
    if (len == 9 && memcmp(p, "-Infinity", 9) == 0) { *out = -Py_HUGE_VAL; return 1; }
    Py_ssize_t i = 0;
    if (i < len && p[i] == '-') i++;
    Py_ssize_t first = i;
    if (i < len && p[i] == '0') i++;
    else if (!(i < len && p[i] >= '1' && p[i] <= '9' && digits(p, len, &i))) return 2;
    int integer = 1;
    if (i < len && p[i] == '.') {
        i++;
        integer = 0;
        if (!digits(p, len, &i)) return 2;
    }
    if (i < len && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        integer = 0;
        if (i < len && (p[i] == '+' || p[i] == '-')) i++;
        if (!digits(p, len, &i)) return 2;
    }
    if (i != len) return 2;
    if (integer) {
        if (i - first > 15) return 2;
        int64_t v = 0;
        for (Py_ssize_t k = first; k < i; k++) v = v * 10 + (p[k] - '0');
        *out = (double)(p[0] == '-' ? -v : v);
        if (*out == 0.0) *out = 0.0;  /* "-0" is the integer 0 */
        return 0;
    }
#ifdef EXACT_SHORT
    {
        uint64_t m = 0;
        int significant = 0, e = 0, seen_point = 0;
        Py_ssize_t k = first;
        for (; k < len && p[k] != 'e' && p[k] != 'E'; k++) {
            if (p[k] == '.') { seen_point = 1; continue; }
            if (significant || p[k] != '0') {
                if (++significant > 19) break;
                m = m * 10 + (uint64_t)(p[k] - '0');
            }
            if (seen_point) e--;
        }
        if (significant <= 19 && k < len) {  /* the exponent: at most 3 digits here */
            k++;
            int sign = 1, x = 0, nd = 0;
            if (p[k] == '+' || p[k] == '-') sign = p[k++] == '-' ? -1 : 1;
            for (; k < len && nd < 4; k++, nd++) x = x * 10 + (p[k] - '0');
            e = nd < 4 ? e + sign * x : 1000;
        }
        if (significant <= 19 && e >= -27 && e <= 27 && short_decimal(m, e, p[0] == '-', out)) return 1;
    }
#endif
    char small[128];
    char *text = len < (Py_ssize_t)sizeof(small) ? small : PyMem_Malloc(len + 1);
    if (!text) { PyErr_NoMemory(); return -2; }
    memcpy(text, p, len);
    text[len] = 0;
    *out = PyOS_string_to_double(text, NULL, NULL);
    if (text != small) PyMem_Free(text);
    if (*out == -1.0 && PyErr_Occurred()) return -2;
    return 1;
}

typedef struct {
    const uint8_t *p;
    table_t table;
    int key_kind;       /* 0 none yet, 1 key, 2 nested_key */
    int64_t *key_of;
    double *cells;
    uint8_t *kinds;
    Py_ssize_t n, cap;
    PyObject *others;
} walk_t;

static int grow(walk_t *w) {
    Py_ssize_t cap = w->cap ? w->cap * 2 : 1024;
    int64_t *key_of = PyMem_Realloc(w->key_of, cap * sizeof(int64_t));
    if (!key_of) return -1;
    w->key_of = key_of;
    double *cells = PyMem_Realloc(w->cells, cap * sizeof(double));
    if (!cells) return -1;
    w->cells = cells;
    uint8_t *kinds = PyMem_Realloc(w->kinds, cap);
    if (!kinds) return -1;
    w->kinds = kinds;
    w->cap = cap;
    return 0;
}

/* One item (from i to end): 1 read, 0 not of the plain shape, -1 on an error. */
static int item(walk_t *w, Py_ssize_t i, Py_ssize_t end) {
    span_t key = {NULL, -1}, value = {NULL, -1};
    int n_keys = 0, n_values = 0, kind = 0;
    while (i < end) {
        uint64_t tag, length;
        if (varint(w->p, end, &i, &tag)) return 0;
        unsigned field = (unsigned)(tag >> 3), wire = (unsigned)(tag & 7);
        if (field == 1 || field == 2 || field == 16) {
            if (wire != 2 || varint(w->p, end, &i, &length) || length > (uint64_t)(end - i)) return 0;
            span_t s = {w->p + i, (Py_ssize_t)length};
            i += (Py_ssize_t)length;
            if (field == 16) { value = s; n_values++; }
            else { key = s; n_keys++; kind = (int)field; }
        } else if (tag == 0 || skip(w->p, end, &i, wire)) {
            return 0;
        }
    }
    if (n_keys != 1 || n_values != 1 || key.len == 0 || (w->key_kind && w->key_kind != kind)) return 0;
    w->key_kind = kind;
    if (w->n == w->cap && grow(w)) { PyErr_NoMemory(); return -1; }
    Py_ssize_t number_of = intern(&w->table, key);
    if (number_of < 0) { PyErr_NoMemory(); return -1; }
    w->key_of[w->n] = number_of;
    int k = number(value.p, value.len, &w->cells[w->n]);
    if (k == -2) return -1;
    if (k == 2) {
        w->cells[w->n] = Py_NAN;
        PyObject *text = PyBytes_FromStringAndSize((const char *)value.p, value.len);
        if (!text || PyList_Append(w->others, text)) { Py_XDECREF(text); return -1; }
        Py_DECREF(text);
    }
    w->kinds[w->n++] = (uint8_t)k;
    return 1;
}

/* One body: its item count, or -2 when not of the plain shape, -1 on an error; its step in *step. */
static Py_ssize_t body(walk_t *w, Py_ssize_t i, Py_ssize_t end, int64_t *step) {
    Py_ssize_t before = w->n;
    int n_steps = 0;
    while (i < end) {
        uint64_t tag, length;
        if (varint(w->p, end, &i, &tag)) return -2;
        unsigned field = (unsigned)(tag >> 3), wire = (unsigned)(tag & 7);
        if (field == 1 || field == 2) {
            if (wire != 2 || varint(w->p, end, &i, &length) || length > (uint64_t)(end - i)) return -2;
            Py_ssize_t stop = i + (Py_ssize_t)length;
            if (field == 1) {
                int r = item(w, i, stop);
                if (r <= 0) return r < 0 ? -1 : -2;
            } else {
                n_steps++;
                *step = 0;
                while (i < stop) {
                    uint64_t t, v;
                    if (varint(w->p, stop, &i, &t)) return -2;
                    if ((t >> 3) == 1) {
                        if ((t & 7) != 0 || varint(w->p, stop, &i, &v)) return -2;
                        *step = (int64_t)v;
                    } else if (t == 0 || skip(w->p, stop, &i, (unsigned)(t & 7))) {
                        return -2;
                    }
                }
            }
            i = stop;
        } else if (tag == 0 || skip(w->p, end, &i, wire)) {
            return -2;
        }
    }
    return n_steps == 1 ? w->n - before : -2;
}

static PyObject *history(PyObject *self, PyObject *args) {
    Py_buffer joined, offsets;
    if (!PyArg_ParseTuple(args, "y*y*", &joined, &offsets)) return NULL;
    PyObject *result = NULL, *names = NULL;
    Py_ssize_t n_bodies = offsets.len / (Py_ssize_t)sizeof(int64_t) - 1;
    const int64_t *off = offsets.buf;
    walk_t w = {0};
    w.p = joined.buf;
    int64_t *counts = NULL, *steps = NULL;
    w.others = PyList_New(0);
    if (!w.others) goto done;
    if (n_bodies < 0) { result = Py_None; Py_INCREF(result); goto done; }
    counts = PyMem_Malloc((n_bodies + 1) * sizeof(int64_t));
    steps = PyMem_Malloc((n_bodies + 1) * sizeof(int64_t));
    if (!counts || !steps) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t b = 0; b < n_bodies; b++) {
        if (off[b] < 0 || off[b] > off[b + 1] || off[b + 1] > joined.len) { result = Py_None; break; }
        Py_ssize_t c = body(&w, (Py_ssize_t)off[b], (Py_ssize_t)off[b + 1], &steps[b]);
        if (c == -1) goto done;
        if (c == -2) { result = Py_None; break; }
        counts[b] = c;
    }
    if (result == Py_None || w.n == 0) { result = Py_None; Py_INCREF(result); goto done; }
    names = PyList_New(w.table.n);
    if (!names) goto done;
    for (Py_ssize_t k = 0; k < w.table.n; k++) {
        PyObject *name = PyUnicode_DecodeUTF8((const char *)w.table.keys[k].p, w.table.keys[k].len, "strict");
        if (!name) {  /* protobuf rejects such a string too: the caller's own read decides */
            PyErr_Clear();
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        PyList_SET_ITEM(names, k, name);
    }
    result = Py_BuildValue(
        "(Oy#y#y#Oy#y#)", names, (const char *)w.key_of, w.n * (Py_ssize_t)sizeof(int64_t), (const char *)w.cells,
        w.n * (Py_ssize_t)sizeof(double), (const char *)w.kinds, w.n, w.others, (const char *)counts,
        n_bodies * (Py_ssize_t)sizeof(int64_t), (const char *)steps, n_bodies * (Py_ssize_t)sizeof(int64_t));
done:
    Py_XDECREF(names);
    Py_XDECREF(w.others);
    PyMem_Free(w.table.keys);
    PyMem_Free(w.table.slots);
    PyMem_Free(w.key_of);
    PyMem_Free(w.cells);
    PyMem_Free(w.kinds);
    PyMem_Free(counts);
    PyMem_Free(steps);
    PyBuffer_Release(&joined);
    PyBuffer_Release(&offsets);
    return result;
}

static uint32_t CRC[8][256];

static void crc_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        CRC[0][i] = c;
    }
    for (int i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++) CRC[k][i] = (CRC[k - 1][i] >> 8) ^ CRC[0][CRC[k - 1][i] & 0xFF];
}

/* zlib's crc32(crc, p, n): the CRC-32 of ISO 3309 continued from ``crc`` (eight bytes a step). */
static uint32_t crc32_of(uint32_t crc, const uint8_t *p, Py_ssize_t n) {
    crc = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        v ^= crc;
        crc = CRC[7][v & 0xFF] ^ CRC[6][(v >> 8) & 0xFF] ^ CRC[5][(v >> 16) & 0xFF] ^ CRC[4][(v >> 24) & 0xFF] ^
              CRC[3][(v >> 32) & 0xFF] ^ CRC[2][(v >> 40) & 0xFF] ^ CRC[1][(v >> 48) & 0xFF] ^ CRC[0][v >> 56];
    }
#endif
    for (; n > 0; p++, n--) crc = CRC[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#define BLOCK 32768
#define HEADER 7

static PyObject *chunks(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    const uint8_t *p = data.buf;
    Py_ssize_t n = data.len, count = 0, cap = n / 64 + 16;
    int64_t *found = PyMem_Malloc(3 * cap * sizeof(int64_t));
    PyObject *result = NULL;
    uint32_t seed[5];
    for (int t = 1; t <= 4; t++) {
        uint8_t type = (uint8_t)t;
        seed[t] = crc32_of(0, &type, 1);
    }
    if (!found) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t block = 0; block < n; block += BLOCK) {
        Py_ssize_t at = block ? block : HEADER, end_block = block + BLOCK;
        while (end_block - at >= HEADER && at < n) {
            if (at + HEADER > n) goto none;
            uint32_t crc = (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 |
                           (uint32_t)p[at + 3] << 24;
            Py_ssize_t length = p[at + 4] | p[at + 5] << 8, type = p[at + 6], end = at + HEADER + length;
            if (type < 1 || type > 4 || end > n || end > end_block) goto none;
            if (crc32_of(seed[type], p + at + HEADER, length) != crc) goto none;
            if (count == cap) {
                cap *= 2;
                int64_t *more = PyMem_Realloc(found, 3 * cap * sizeof(int64_t));
                if (!more) { PyErr_NoMemory(); goto done; }
                found = more;
            }
            found[3 * count] = at + HEADER;
            found[3 * count + 1] = end;
            found[3 * count + 2] = type;
            count++;
            at = end;
        }
    }
    result = Py_BuildValue("y#", (const char *)found, count * 3 * (Py_ssize_t)sizeof(int64_t));
    goto done;
none:
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(found);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"chunks", chunks, METH_VARARGS, "Walk a W&B run file's framing (see the module's source)."},
    {"history", history, METH_VARARGS, "Decode joined HistoryRecord bodies (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wirehistory", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wirehistory(void) {
    crc_table();
    PyObject *m = PyModule_Create(&module);
#ifdef AGENTGRPO_SOURCE_SHA256
    if (m && PyModule_AddStringConstant(m, "SOURCE_SHA256", AGENTGRPO_SOURCE_SHA256)) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
