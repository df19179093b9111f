/* The platform layer (plat.h) on Windows (Vista and later): Win32
   threads, SRW locks and condition variables, the performance counter,
   ReadDirectoryChangesW and Winsock 2. Links with ws2_32. */
#ifdef _WIN32
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0601
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <process.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "plat.h"

_Static_assert(sizeof(HANDLE) <= sizeof(weft_plat_store), "HANDLE fits");
_Static_assert(sizeof(SRWLOCK) <= sizeof(weft_plat_store), "SRWLOCK fits");
_Static_assert(sizeof(CONDITION_VARIABLE) <= sizeof(weft_plat_store), "CONDITION_VARIABLE fits");

#define LOCK(m) ((SRWLOCK *)(void *)(m)->os.bytes)
#define CV(c) ((CONDITION_VARIABLE *)(void *)(c)->os.bytes)
#define HANDLE_OF(t) (*(HANDLE *)(void *)(t)->os.bytes)

#define MAX_WPATH 1024 /* UTF-16 units of a path weft converts */

/* ---- threads ---- */

static unsigned __stdcall thread_main(void *arg) {
  weft_thread *t = arg;
  t->fn(t->arg);
  return 0;
}

int weft__thread_start(weft_thread *t, void (*fn)(void *arg), void *arg, size_t stack_size) {
  t->fn = fn;
  t->arg = arg;
  uintptr_t h = _beginthreadex(NULL, (unsigned)stack_size, thread_main, t,
                               stack_size ? STACK_SIZE_PARAM_IS_A_RESERVATION : 0, NULL);
  if (!h) return WEFT_EIO;
  HANDLE_OF(t) = (HANDLE)h;
  return WEFT_OK;
}

void weft__thread_join(weft_thread *t) {
  WaitForSingleObject(HANDLE_OF(t), INFINITE);
  CloseHandle(HANDLE_OF(t));
}

int weft__mutex_init(weft_mutex *m) {
  InitializeSRWLock(LOCK(m));
  return WEFT_OK;
}
void weft__mutex_destroy(weft_mutex *m) { (void)m; }
void weft__mutex_lock(weft_mutex *m) { AcquireSRWLockExclusive(LOCK(m)); }
void weft__mutex_unlock(weft_mutex *m) { ReleaseSRWLockExclusive(LOCK(m)); }

int weft__cond_init(weft_cond *c) {
  InitializeConditionVariable(CV(c));
  return WEFT_OK;
}
void weft__cond_destroy(weft_cond *c) { (void)c; }
void weft__cond_wait(weft_cond *c, weft_mutex *m) {
  SleepConditionVariableSRW(CV(c), LOCK(m), INFINITE, 0);
}
void weft__cond_signal(weft_cond *c) { WakeConditionVariable(CV(c)); }
void weft__cond_broadcast(weft_cond *c) { WakeAllConditionVariable(CV(c)); }

/* The wait is in milliseconds, rounded up so a short wait still sleeps;
   Windows measures it on its own monotonic tick. */
int weft__cond_wait_ns(weft_cond *c, weft_mutex *m, uint64_t ns) {
  uint64_t ms = (ns + 999999u) / 1000000u;
  DWORD d = ms >= INFINITE ? INFINITE - 1 : (DWORD)ms;
  if (SleepConditionVariableSRW(CV(c), LOCK(m), d, 0)) return 0;
  return GetLastError() == ERROR_TIMEOUT;
}

void weft__once_run(weft_once *o, void (*fn)(void)) {
  if (atomic_load_explicit(&o->state, memory_order_acquire) == 2) return;
  int expect = 0;
  if (atomic_compare_exchange_strong(&o->state, &expect, 1)) {
    fn();
    atomic_store_explicit(&o->state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&o->state, memory_order_acquire) != 2) SwitchToThread();
}

int weft__cpu_count(void) {
  DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
  return n > 0 ? (int)n : 1;
}

uint64_t weft__clock_ns(void) {
  static LARGE_INTEGER freq; /* fixed at boot: a race writes the same value */
  if (!freq.QuadPart) QueryPerformanceFrequency(&freq);
  LARGE_INTEGER c;
  QueryPerformanceCounter(&c);
  uint64_t f = (uint64_t)freq.QuadPart, t = (uint64_t)c.QuadPart;
  return t / f * 1000000000u + t % f * 1000000000u / f;
}

uint64_t weft__clock_coarse_ns(void) { return GetTickCount64() * 1000000u; }

uint64_t weft__thread_cpu_ns(void) {
  FILETIME create, exit, kernel, user;
  if (!GetThreadTimes(GetCurrentThread(), &create, &exit, &kernel, &user)) return 0;
  uint64_t k = ((uint64_t)kernel.dwHighDateTime << 32) | kernel.dwLowDateTime;
  uint64_t u = ((uint64_t)user.dwHighDateTime << 32) | user.dwLowDateTime;
  return (k + u) * 100u; /* 100 ns units */
}

int weft__cpu_clock_self(weft_cpu_clock *c) {
  HANDLE h;
  if (!DuplicateHandle(GetCurrentProcess(), GetCurrentThread(), GetCurrentProcess(), &h,
                       THREAD_QUERY_LIMITED_INFORMATION, FALSE, 0))
    return WEFT_EIO;
  c->os.p = h;
  return WEFT_OK;
}

uint64_t weft__cpu_clock_ns(const weft_cpu_clock *c) {
  FILETIME create, exit, kernel, user;
  if (!GetThreadTimes((HANDLE)c->os.p, &create, &exit, &kernel, &user)) return 0;
  uint64_t k = ((uint64_t)kernel.dwHighDateTime << 32) | kernel.dwLowDateTime;
  uint64_t u = ((uint64_t)user.dwHighDateTime << 32) | user.dwLowDateTime;
  return (k + u) * 100u;
}

void weft__cpu_clock_close(weft_cpu_clock *c) { CloseHandle((HANDLE)c->os.p); }

/* ---- files and directories ---- */

/* path (UTF-8, '/' or '\\') as UTF-16 into w; 0 when too long or bad. */
static int wide(const char *path, wchar_t *w, int cap) {
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, cap);
  if (n <= 0) return 0;
  for (int i = 0; i < n; i++)
    if (w[i] == L'/') w[i] = L'\\';
  return n;
}

/* UTF-16 (n units, not terminated) as UTF-8 into out, '\\' made '/'. */
static int narrow(const wchar_t *w, int n, char *out, int cap) {
  int k = WideCharToMultiByte(CP_UTF8, 0, w, n, out, cap - 1, NULL, NULL);
  if (k <= 0) return 0;
  out[k] = 0;
  for (int i = 0; i < k; i++)
    if (out[i] == '\\') out[i] = '/';
  return k;
}

/* 100 ns ticks since 1601 as nanoseconds since 1970. */
static int64_t unix_ns(LARGE_INTEGER t) { return (t.QuadPart - 116444736000000000LL) * 100; }

int weft__stat_path(const char *path, weft_stat *st) {
  wchar_t w[MAX_WPATH];
  if (!wide(path, w, MAX_WPATH)) return WEFT_EINVAL;
  /* Opened for attributes only, sharing everything: an editor holding
     the file open does not stop it. Follows symbolic links. */
  HANDLE h =
      CreateFileW(w, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                  NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD e = GetLastError();
    return e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? WEFT_EINVAL : WEFT_EIO;
  }
  FILE_BASIC_INFO bi;
  LARGE_INTEGER size;
  int ok = GetFileInformationByHandleEx(h, FileBasicInfo, &bi, sizeof bi);
  DWORD type = GetFileType(h);
  if (ok && !(bi.FileAttributes & FILE_ATTRIBUTE_DIRECTORY))
    ok = GetFileSizeEx(h, &size);
  else
    size.QuadPart = 0;
  CloseHandle(h);
  if (!ok) return WEFT_EIO;
  st->size = size.QuadPart;
  st->mtime_ns = unix_ns(bi.LastWriteTime);
  st->ctime_ns = unix_ns(bi.ChangeTime.QuadPart ? bi.ChangeTime : bi.LastWriteTime);
  st->is_dir = (bi.FileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
  st->is_file = !st->is_dir && type == FILE_TYPE_DISK;
  return WEFT_OK;
}

int weft__dir_list(const char *path, int (*each)(void *ud, const char *name, int is_dir),
                   void *ud) {
  wchar_t w[MAX_WPATH];
  int n = wide(path, w, MAX_WPATH - 2);
  if (!n) return WEFT_EINVAL;
  n--; /* the terminator */
  if (n && w[n - 1] != L'\\') w[n++] = L'\\';
  w[n++] = L'*';
  w[n] = 0;
  WIN32_FIND_DATAW fd;
  HANDLE h = FindFirstFileExW(w, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
  if (h == INVALID_HANDLE_VALUE) return WEFT_EINVAL;
  do {
    const wchar_t *f = fd.cFileName;
    if (f[0] == L'.' && (!f[1] || (f[1] == L'.' && !f[2]))) continue;
    char name[MAX_PATH * 3 + 1];
    if (!narrow(f, (int)wcslen(f), name, (int)sizeof name)) continue;
    if (each(ud, name, (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0)) break;
  } while (FindNextFileW(h, &fd));
  FindClose(h);
  return WEFT_OK;
}

int weft__path_resolve(const char *path, char *out, size_t cap) {
  wchar_t w[MAX_WPATH], r[MAX_WPATH];
  if (!wide(path, w, MAX_WPATH)) return WEFT_EINVAL;
  HANDLE h =
      CreateFileW(w, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                  NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  if (h == INVALID_HANDLE_VALUE) return WEFT_EINVAL;
  DWORD n = GetFinalPathNameByHandleW(h, r, MAX_WPATH, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
  CloseHandle(h);
  if (n == 0 || n >= MAX_WPATH) return WEFT_EINVAL;
  const wchar_t *p = r;
  if (wcsncmp(p, L"\\\\?\\UNC\\", 8) == 0) { /* \\?\UNC\server\share: \\server\share */
    p += 6;
    r[6] = L'\\';
  } else if (wcsncmp(p, L"\\\\?\\", 4) == 0) {
    p += 4;
  }
  return narrow(p, (int)wcslen(p), out, cap > INT_MAX ? INT_MAX : (int)cap) ? WEFT_OK : WEFT_EINVAL;
}

int weft__path_absolute(const char *path, char *out, size_t cap) {
  wchar_t w[MAX_WPATH], r[MAX_WPATH];
  if (!wide(path, w, MAX_WPATH)) return WEFT_EINVAL;
  DWORD n = GetFullPathNameW(w, MAX_WPATH, r, NULL);
  if (n == 0 || n >= MAX_WPATH) return WEFT_EINVAL;
  return narrow(r, (int)n, out, cap > INT_MAX ? INT_MAX : (int)cap) ? WEFT_OK : WEFT_EINVAL;
}

/* ---- change notifications: ReadDirectoryChangesW on each directory ---- */

/* Each directory is watched on its own, as inotify does, rather than the
   root with its subtree: Wine's subtree watch never reports changes in
   the directories that existed before it began. */
#define DIR_BUF (16 * 1024) /* events a directory holds between reads */
#define WATCH_WHAT                                                                                 \
  (FILE_NOTIFY_CHANGE_FILE_NAME | FILE_NOTIFY_CHANGE_DIR_NAME | FILE_NOTIFY_CHANGE_LAST_WRITE |    \
   FILE_NOTIFY_CHANGE_SIZE | FILE_NOTIFY_CHANGE_CREATION)

typedef struct dirw {
  HANDLE h;      /* INVALID_HANDLE_VALUE: gone */
  OVERLAPPED ov; /* the read in flight; ov.hEvent is signalled when it ends */
  int pending;   /* a read is in flight: the system writes into buf */
  DWORD *buf;    /* DIR_BUF bytes, DWORD-aligned as the call needs */
  char *rel;     /* relative to the root ("" for the root), owned */
} dirw;

struct weft_fswatch {
  char *root;  /* UTF-8, owned */
  dirw **dirs; /* each its own block: an OVERLAPPED in flight never moves;
                  looked up by path: O(n) in the directories watched */
  int ndirs, capdirs;
  weft_alloc_fn alloc;
  void *alloc_ud;
};

static char *dup_str(weft_fswatch *fw, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = fw->alloc(fw->alloc_ud, NULL, 0, n);
  if (d) memcpy(d, s, n);
  return d;
}

static void free_str(weft_fswatch *fw, char *s) {
  if (s) fw->alloc(fw->alloc_ud, s, strlen(s) + 1, 0);
}

/* root/rel (or root for ""), into out; 0 when too long. */
static int full_path(weft_fswatch *fw, const char *rel, char *out, size_t cap) {
  int n = *rel ? snprintf(out, cap, "%s/%s", fw->root, rel) : snprintf(out, cap, "%s", fw->root);
  return n > 0 && (size_t)n < cap;
}

static int issue(dirw *d) {
  d->pending =
      ReadDirectoryChangesW(d->h, d->buf, DIR_BUF, FALSE, WATCH_WHAT, NULL, &d->ov, NULL) != 0;
  return d->pending;
}

/* Stops a directory's watch: the read in flight is cancelled first, as
   the system writes into buf until it ends. */
static void stop_dir(dirw *d) {
  if (d->h == INVALID_HANDLE_VALUE) return;
  if (d->pending) {
    DWORD got;
    CancelIoEx(d->h, &d->ov);
    GetOverlappedResult(d->h, &d->ov, &got, TRUE);
    d->pending = 0;
  }
  CloseHandle(d->h);
  d->h = INVALID_HANDLE_VALUE;
}

int weft__fswatch_open(const char *root, weft_alloc_fn alloc, void *alloc_ud, weft_fswatch **out) {
  *out = NULL;
  weft_fswatch *fw = alloc(alloc_ud, NULL, 0, sizeof *fw);
  if (!fw) return WEFT_ENOMEM;
  memset(fw, 0, sizeof *fw);
  fw->alloc = alloc;
  fw->alloc_ud = alloc_ud;
  fw->root = dup_str(fw, root);
  if (!fw->root) {
    weft__fswatch_close(fw);
    return WEFT_ENOMEM;
  }
  int rc = weft__fswatch_add_dir(fw, ""); /* the root: no notifications, no watcher */
  if (rc != WEFT_OK) {
    weft__fswatch_close(fw);
    return rc;
  }
  *out = fw;
  return WEFT_OK;
}

/* Stops and frees a directory's watch. */
static void free_dir(weft_fswatch *fw, dirw *d) {
  stop_dir(d);
  if (d->ov.hEvent) CloseHandle(d->ov.hEvent);
  if (d->buf) fw->alloc(fw->alloc_ud, d->buf, DIR_BUF, 0);
  free_str(fw, d->rel);
  fw->alloc(fw->alloc_ud, d, sizeof *d, 0);
}

void weft__fswatch_close(weft_fswatch *fw) {
  if (!fw) return;
  for (int i = 0; i < fw->ndirs; i++) free_dir(fw, fw->dirs[i]);
  if (fw->dirs) fw->alloc(fw->alloc_ud, fw->dirs, sizeof(dirw *) * (size_t)fw->capdirs, 0);
  free_str(fw, fw->root);
  fw->alloc(fw->alloc_ud, fw, sizeof *fw, 0);
}

int weft__fswatch_add_dir(weft_fswatch *fw, const char *rel) {
  for (int i = 0; i < fw->ndirs; i++)
    if (strcmp(fw->dirs[i]->rel, rel) == 0 && fw->dirs[i]->h != INVALID_HANDLE_VALUE)
      return WEFT_OK;
  if (fw->ndirs == fw->capdirs) {
    int nc = fw->capdirs ? fw->capdirs * 2 : 16;
    dirw **nd = fw->alloc(fw->alloc_ud, fw->dirs, sizeof(dirw *) * (size_t)fw->capdirs,
                          sizeof(dirw *) * (size_t)nc);
    if (!nd) return WEFT_ENOMEM;
    fw->dirs = nd;
    fw->capdirs = nc;
  }
  char full[MAX_WPATH * 3];
  wchar_t w[MAX_WPATH];
  if (!full_path(fw, rel, full, sizeof full) || !wide(full, w, MAX_WPATH)) return WEFT_EIO;
  dirw *d = fw->alloc(fw->alloc_ud, NULL, 0, sizeof *d);
  if (!d) return WEFT_ENOMEM;
  memset(d, 0, sizeof *d);
  d->h = INVALID_HANDLE_VALUE;
  d->rel = dup_str(fw, rel);
  d->buf = fw->alloc(fw->alloc_ud, NULL, 0, DIR_BUF);
  if (!d->rel || !d->buf) {
    free_dir(fw, d);
    return WEFT_ENOMEM;
  }
  d->h = CreateFileW(w, FILE_LIST_DIRECTORY, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OVERLAPPED, NULL);
  d->ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (d->h == INVALID_HANDLE_VALUE || !d->ov.hEvent || !issue(d)) {
    free_dir(fw, d);
    return WEFT_EIO;
  }
  fw->dirs[fw->ndirs++] = d;
  return WEFT_OK;
}

/* Whether full is a directory now. */
static int is_dir_now(const char *full) {
  weft_stat st;
  return weft__stat_path(full, &st) == WEFT_OK && st.is_dir;
}

/* The events of directory d that came, then its next read. */
static int read_dir(weft_fswatch *fw, dirw *d,
                    void (*on)(void *ud, int kind, const char *rel, const char *name), void *ud) {
  if (d->h == INVALID_HANDLE_VALUE) return 0;
  DWORD got = 0;
  if (!d->pending && !issue(d)) {
    stop_dir(d); /* the directory is gone */
    return 0;
  }
  if (!GetOverlappedResult(d->h, &d->ov, &got, FALSE)) {
    if (GetLastError() == ERROR_IO_INCOMPLETE) return 0; /* nothing yet */
    d->pending = 0;
    stop_dir(d);
    return 0;
  }
  d->pending = 0;
  /* The system records the changes made until the next read is issued,
     after these. */
  const DWORD *buf = d->buf;
  const char *dir = d->rel;
  int count = 0;
  if (got == 0) { /* the system's buffer overflowed: events are lost */
    on(ud, WEFT_FS_LOST, "", "");
    count++;
  }
  for (DWORD off = 0; got > 0;) {
    const FILE_NOTIFY_INFORMATION *ev =
        (const FILE_NOTIFY_INFORMATION *)(const void *)((const char *)buf + off);
    char name[MAX_PATH * 3 + 1], rel[MAX_WPATH * 3], full[MAX_WPATH * 3];
    int kind = 0;
    if (narrow(ev->FileName, (int)(ev->FileNameLength / sizeof(WCHAR)), name, (int)sizeof name) &&
        (size_t)snprintf(rel, sizeof rel, "%s%s%s", dir, *dir ? "/" : "", name) < sizeof rel &&
        full_path(fw, rel, full, sizeof full)) {
      switch (ev->Action) {
      case FILE_ACTION_ADDED:
      case FILE_ACTION_RENAMED_NEW_NAME:
        kind = is_dir_now(full) ? WEFT_FS_NEWDIR : WEFT_FS_SAVED;
        break;
      case FILE_ACTION_MODIFIED: /* no close is told: a write is a save */
        kind = is_dir_now(full) ? 0 : WEFT_FS_SAVED;
        break;
      default: /* removed, renamed away */
        break;
      }
    }
    if (kind) {
      on(ud, kind, rel, name);
      count++;
    }
    if (!ev->NextEntryOffset) break;
    off += ev->NextEntryOffset;
  }
  if (!issue(d)) stop_dir(d);
  return count;
}

int weft__fswatch_read(weft_fswatch *fw,
                       void (*on)(void *ud, int kind, const char *rel, const char *name),
                       void *ud) {
  int count = 0;
  for (int i = 0; i < fw->ndirs; i++) /* ndirs may grow meanwhile: new ones are read too */
    for (int n; (n = read_dir(fw, fw->dirs[i], on, ud)) > 0;) count += n;
  return count;
}

/* ---- local sockets: Winsock 2, started once per process ---- */

static weft_once wsa_once = WEFT_ONCE_INIT;
static int wsa_ok;

static void wsa_start(void) {
  WSADATA d;
  wsa_ok = WSAStartup(MAKEWORD(2, 2), &d) == 0;
}

static int nonblocking(SOCKET s) {
  u_long one = 1;
  return ioctlsocket(s, FIONBIO, &one) == 0 &&
         SetHandleInformation((HANDLE)s, HANDLE_FLAG_INHERIT, 0);
}

int weft__sock_listen(int port, weft_sock *out, int *bound) {
  *out = WEFT_SOCK_NONE;
  if (port < 0 || port > 65535) return WEFT_EINVAL;
  weft__once_run(&wsa_once, wsa_start);
  if (!wsa_ok) return WEFT_EIO;
  SOCKET s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET) return WEFT_EIO;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((u_short)port);
  int alen = (int)sizeof a;
  /* No SO_REUSEADDR: on Windows it lets another socket take the port. */
  if (!nonblocking(s) || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(s, WEFT_SOCK_BACKLOG) != 0 || getsockname(s, (struct sockaddr *)&a, &alen) != 0) {
    closesocket(s);
    return WEFT_EIO;
  }
  if (bound) *bound = ntohs(a.sin_port);
  *out = (weft_sock)s;
  return WEFT_OK;
}

int weft__sock_accept(weft_sock listener, weft_sock *out) {
  *out = WEFT_SOCK_NONE;
  SOCKET s = accept((SOCKET)listener, NULL, NULL);
  if (s == INVALID_SOCKET) return WSAGetLastError() == WSAEWOULDBLOCK ? WEFT_EBUSY : WEFT_EIO;
  if (!nonblocking(s)) {
    closesocket(s);
    return WEFT_EIO;
  }
  BOOL one = TRUE; /* no Nagle: a message sent right after another does not wait for its ACK */
  (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (const char *)&one, sizeof one);
  *out = (weft_sock)s;
  return WEFT_OK;
}

int weft__sock_wait(weft_sock s, int what, int timeout_ms) {
  WSAPOLLFD p;
  p.fd = (SOCKET)s;
  p.events =
      (SHORT)((what & WEFT_SOCK_IN ? POLLRDNORM : 0) | (what & WEFT_SOCK_OUT ? POLLWRNORM : 0));
  p.revents = 0;
  int r = WSAPoll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms);
  if (r < 0) return WEFT_EIO;
  return r > 0;
}

int weft__sock_wait_in(const weft_sock *s, int n, int timeout_ms) {
  WSAPOLLFD p[8];
  if (n < 1 || n > 8) return WEFT_EINVAL;
  for (int i = 0; i < n; i++) {
    p[i].fd = (SOCKET)s[i];
    p[i].events = POLLRDNORM;
    p[i].revents = 0;
  }
  int r = WSAPoll(p, (ULONG)n, timeout_ms < 0 ? -1 : timeout_ms);
  if (r < 0) return WEFT_EIO;
  int mask = 0;
  for (int i = 0; i < n; i++)
    if (p[i].revents) mask |= 1 << i;
  return mask;
}

long weft__sock_recv(weft_sock s, void *buf, size_t n) {
  int r = recv((SOCKET)s, buf, n > INT_MAX ? INT_MAX : (int)n, 0);
  if (r > 0) return r;
  if (r < 0 && WSAGetLastError() == WSAEWOULDBLOCK) return 0;
  return WEFT_ECLOSED;
}

long weft__sock_send(weft_sock s, const void *buf, size_t n) {
  int r = send((SOCKET)s, buf, n > INT_MAX ? INT_MAX : (int)n, 0);
  if (r >= 0) return r;
  return WSAGetLastError() == WSAEWOULDBLOCK ? 0 : WEFT_ECLOSED;
}

void weft__sock_close(weft_sock s) {
  if (s != WEFT_SOCK_NONE) closesocket((SOCKET)s);
}
#endif
