// A SQLite VFS that keeps a checksum in the last 8 bytes of every page of
// a database file whose header reserves 8 bytes a page, written as the
// page is written to the file and checked as it is read back: a page the
// disk (or anyone) changed is an error when it is read, never a row.
//
// It wraps the default VFS. Only main database files are wrapped: the
// write-ahead log has SQLite's own checksums, checked when it is
// recovered, and a page that leaves the log for the file (a checkpoint)
// gets its checksum then. The declarations of SQLite's VFS structures are
// in pagesum.h; the SQLite library is the one github.com/mattn/go-sqlite3
// links into the binary.

#include <stdint.h>
#include <string.h>

#include "pagesum.h"

#define PAGESUM_OK 0
#define PAGESUM_IOERR_DATA (10 | (32 << 8)) /* SQLITE_IOERR_DATA */
#define PAGESUM_OPEN_MAIN_DB 0x00000100

typedef struct sumFile {
	sqlite3_file base;
	int checked; /* the header reserves 8 bytes a page: sums are kept */
	int pad;
	/* the wrapped VFS's file follows */
} sumFile;

#define REAL(f) ((sqlite3_file *)(((sumFile *)(f)) + 1))
#define BELOW(v) ((sqlite3_vfs *)((v)->pAppData))

// pagesum_compute sums n bytes (a multiple of 8) as little-endian 64-bit
// words, Fletcher's way: a changed word, or two words swapped, change it.
uint64_t pagesum_compute(const unsigned char *a, int n) {
	uint64_t s1 = 0x9E3779B97F4A7C15ull, s2 = 0;
	for (int i = 0; i < n; i += 8) {
		uint64_t w = (uint64_t)a[i] | (uint64_t)a[i + 1] << 8 | (uint64_t)a[i + 2] << 16 | (uint64_t)a[i + 3] << 24 |
		             (uint64_t)a[i + 4] << 32 | (uint64_t)a[i + 5] << 40 | (uint64_t)a[i + 6] << 48 | (uint64_t)a[i + 7] << 56;
		s1 += w;
		s2 += s1;
	}
	return s1 ^ (s2 << 1 | s2 >> 63);
}

static void put64(unsigned char *p, uint64_t v) {
	for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p) {
	uint64_t v = 0;
	for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
	return v;
}

// isPage: a read or write of a whole page (SQLite's are powers of two
// from 512 to 65536); the header's own reads are shorter.
static int isPage(int n) { return n >= 512 && n <= 65536 && (n & (n - 1)) == 0; }

// noteHeader learns from the file's header whether its pages keep sums.
static void noteHeader(sumFile *p, const void *buf, int n, sqlite3_int64 off) {
	const unsigned char *h = buf;
	if (off == 0 && n >= 100 && memcmp(h, "SQLite format 3", 16) == 0) p->checked = h[20] == 8;
}

static int sumClose(sqlite3_file *f) { return REAL(f)->pMethods->xClose(REAL(f)); }

static int sumRead(sqlite3_file *f, void *buf, int n, sqlite3_int64 off) {
	sumFile *p = (sumFile *)f;
	int rc = REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
	if (rc != PAGESUM_OK) return rc;
	noteHeader(p, buf, n, off);
	if (p->checked && isPage(n)) {
		const unsigned char *page = buf;
		if (get64(page + n - 8) != pagesum_compute(page, n - 8)) return PAGESUM_IOERR_DATA;
	}
	return rc;
}

static int sumWrite(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off) {
	sumFile *p = (sumFile *)f;
	noteHeader(p, buf, n, off);
	if (p->checked && isPage(n)) {
		// The last 8 bytes of a page are reserved for this: SQLite
		// writes nothing there, so the buffer is the VFS's to fill.
		unsigned char *page = (unsigned char *)buf;
		put64(page + n - 8, pagesum_compute(page, n - 8));
	}
	return REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}

static int sumTruncate(sqlite3_file *f, sqlite3_int64 size) { return REAL(f)->pMethods->xTruncate(REAL(f), size); }
static int sumSync(sqlite3_file *f, int flags) { return REAL(f)->pMethods->xSync(REAL(f), flags); }
static int sumFileSize(sqlite3_file *f, sqlite3_int64 *size) { return REAL(f)->pMethods->xFileSize(REAL(f), size); }
static int sumLock(sqlite3_file *f, int lock) { return REAL(f)->pMethods->xLock(REAL(f), lock); }
static int sumUnlock(sqlite3_file *f, int lock) { return REAL(f)->pMethods->xUnlock(REAL(f), lock); }
static int sumCheckReservedLock(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }
static int sumFileControl(sqlite3_file *f, int op, void *arg) { return REAL(f)->pMethods->xFileControl(REAL(f), op, arg); }
static int sumSectorSize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int sumDeviceCharacteristics(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int sumShmMap(sqlite3_file *f, int pg, int size, int extend, void volatile **pp) {
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, size, extend, pp);
}
static int sumShmLock(sqlite3_file *f, int off, int n, int flags) { return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags); }
static void sumShmBarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int sumShmUnmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }

// Pages are never mapped: every page is read, and so checked.
static int sumFetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp) {
	*pp = 0;
	return PAGESUM_OK;
}
static int sumUnfetch(sqlite3_file *f, sqlite3_int64 off, void *page) { return PAGESUM_OK; }

static const sqlite3_io_methods sumMethods = {
	3, sumClose, sumRead, sumWrite, sumTruncate, sumSync, sumFileSize, sumLock, sumUnlock, sumCheckReservedLock,
	sumFileControl, sumSectorSize, sumDeviceCharacteristics, sumShmMap, sumShmLock, sumShmBarrier, sumShmUnmap,
	sumFetch, sumUnfetch,
};

static int sumOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
	if (!(flags & PAGESUM_OPEN_MAIN_DB)) return BELOW(vfs)->xOpen(BELOW(vfs), name, f, flags, outFlags);
	sumFile *p = (sumFile *)f;
	memset(p, 0, sizeof(*p));
	int rc = BELOW(vfs)->xOpen(BELOW(vfs), name, REAL(f), flags, outFlags);
	if (rc == PAGESUM_OK) p->base.pMethods = &sumMethods;
	return rc;
}

static int sumDelete(sqlite3_vfs *vfs, const char *name, int syncDir) { return BELOW(vfs)->xDelete(BELOW(vfs), name, syncDir); }
static int sumAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) { return BELOW(vfs)->xAccess(BELOW(vfs), name, flags, out); }
static int sumFullPathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
	return BELOW(vfs)->xFullPathname(BELOW(vfs), name, n, out);
}
static void *sumDlOpen(sqlite3_vfs *vfs, const char *name) { return BELOW(vfs)->xDlOpen(BELOW(vfs), name); }
static void sumDlError(sqlite3_vfs *vfs, int n, char *msg) { BELOW(vfs)->xDlError(BELOW(vfs), n, msg); }
static void (*sumDlSym(sqlite3_vfs *vfs, void *h, const char *sym))(void) { return BELOW(vfs)->xDlSym(BELOW(vfs), h, sym); }
static void sumDlClose(sqlite3_vfs *vfs, void *h) { BELOW(vfs)->xDlClose(BELOW(vfs), h); }
static int sumRandomness(sqlite3_vfs *vfs, int n, char *out) { return BELOW(vfs)->xRandomness(BELOW(vfs), n, out); }
static int sumSleep(sqlite3_vfs *vfs, int us) { return BELOW(vfs)->xSleep(BELOW(vfs), us); }
static int sumCurrentTime(sqlite3_vfs *vfs, double *out) { return BELOW(vfs)->xCurrentTime(BELOW(vfs), out); }
static int sumGetLastError(sqlite3_vfs *vfs, int n, char *out) { return BELOW(vfs)->xGetLastError(BELOW(vfs), n, out); }
static int sumCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) { return BELOW(vfs)->xCurrentTimeInt64(BELOW(vfs), out); }

static sqlite3_vfs sumVFS = {
	2, 0, 0, 0, PAGESUM_VFS, 0, sumOpen, sumDelete, sumAccess, sumFullPathname, sumDlOpen, sumDlError, sumDlSym,
	sumDlClose, sumRandomness, sumSleep, sumCurrentTime, sumGetLastError, sumCurrentTimeInt64,
};

int pagesum_register(void) {
	if (sqlite3_vfs_find(PAGESUM_VFS)) return PAGESUM_OK;
	sqlite3_vfs *below = sqlite3_vfs_find(0);
	if (!below) return 1; /* SQLITE_ERROR */
	sumVFS.mxPathname = below->mxPathname;
	sumVFS.szOsFile = (int)sizeof(sumFile) + below->szOsFile;
	sumVFS.pAppData = below;
	return sqlite3_vfs_register(&sumVFS, 0);
}
