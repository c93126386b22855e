/*
 * A stand-in for libcudart: exactly the functions ucx-ts binds (src/ffi/symbols.ts, cudaSymbols),
 * over host memory, for tests on machines without a GPU. It is a test double, not a product.
 *
 * What it imitates, and why:
 * - "Device" memory lives in its own address range (reserved at DEVICE_BASE) and is mapped there
 *   PROT_NONE: host code that touches a device pointer (a missed staging step, UCX given a device
 *   pointer it cannot handle) faults, as it would on a GPU. The stand-in itself reaches the bytes
 *   through a second, private read-write mapping of the same memfd.
 * - Copies check their cudaMemcpyKind against where the pointers really are; a wrong kind, or a
 *   range that leaves its allocation, is cudaErrorInvalidValue.
 * - Streams are FIFO queues drained by a thread of their own, so async copies and events complete
 *   later, not inside the call; cudaEventQuery answers cudaErrorNotReady until they do.
 * - cudaPointerGetAttributes answers device (2), host (1, cudaMallocHost) or unregistered (0).
 * - STANDIN_CUDA_DEVICES sets the device count (default 1; 0 makes cudaGetDeviceCount fail with
 *   cudaErrorNoDevice, as a host with a driver and no GPU does).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { OK = 0, INVALID_VALUE = 1, MEMORY_ALLOCATION = 2, NO_DEVICE = 100, INVALID_DEVICE = 101,
       INVALID_HANDLE = 400, NOT_READY = 600 };
enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT_KIND = 4 };

#define DEVICE_BASE ((uintptr_t)0x6d0000000000ULL) /* recognisable: 0x6d.. is "device" here */
#define DEVICE_SPAN ((size_t)64 << 30)              /* address space only (PROT_NONE, NORESERVE) */
#define GUARD ((size_t)1 << 16)                     /* unmapped gap after every allocation */

typedef struct alloc { uintptr_t base; size_t size, mapped; char *alias; int device, host; struct alloc *next; } alloc_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static alloc_t *allocs;
static uintptr_t next_device = 0;

/* Freed device ranges (allocation and its guard). Addresses are handed out fresh until the span is
   used up, so a use after free faults for as long as possible; then freed ranges are reused, first
   fit, as a real allocator would (a soak allocates far more than 64 GiB over an hour). */
typedef struct hole { uintptr_t base; size_t span; struct hole *next; } hole_t;
static hole_t *holes;

static uintptr_t take_hole(size_t span) {
  for (hole_t **at = &holes; *at; at = &(*at)->next) {
    hole_t *h = *at;
    if (h->span < span) continue;
    uintptr_t base = h->base;
    h->base += span;
    h->span -= span;
    if (h->span == 0) { *at = h->next; free(h); }
    return base;
  }
  return 0;
}
static __thread int current_device;

static int device_count(void) {
  const char *e = getenv("STANDIN_CUDA_DEVICES");
  return e ? atoi(e) : 1;
}

static void reserve(void) {
  if (next_device) return;
  void *p = mmap((void *)DEVICE_BASE, DEVICE_SPAN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  next_device = p == MAP_FAILED ? 0 : DEVICE_BASE;
}

/* The allocation holding [p, p + n), or NULL. `host` selects the pinned-host table entries. */
static alloc_t *find(uintptr_t p, size_t n, int host) {
  for (alloc_t *a = allocs; a; a = a->next)
    if (a->host == host && p >= a->base && p < a->base + (a->size ? a->size : 1) && n <= a->base + a->size - p + (a->size ? 0 : 1)) return a;
  return NULL;
}

int cudaRuntimeGetVersion(int *v) { *v = 12000; return OK; }
int cudaDriverGetVersion(int *v) { *v = 12000; return OK; }
int cudaGetDeviceCount(int *n) { *n = device_count(); return *n > 0 ? OK : NO_DEVICE; }
int cudaSetDevice(int d) { if (d < 0 || d >= device_count()) return INVALID_DEVICE; current_device = d; return OK; }
int cudaGetDevice(int *d) { if (device_count() <= 0) return NO_DEVICE; *d = current_device; return OK; }

const char *cudaGetErrorString(int e) {
  switch (e) {
    case OK: return "no error";
    case INVALID_VALUE: return "invalid argument";
    case MEMORY_ALLOCATION: return "out of memory";
    case NO_DEVICE: return "no CUDA-capable device is detected";
    case INVALID_DEVICE: return "invalid device ordinal";
    case INVALID_HANDLE: return "invalid resource handle";
    case NOT_READY: return "device not ready";
    default: return "unrecognized error code";
  }
}

int cudaMalloc(void **out, size_t size) {
  if (!out) return INVALID_VALUE;
  if (device_count() <= 0) return NO_DEVICE;
  size_t mapped = (size + 4095) & ~(size_t)4095;
  if (mapped == 0) mapped = 4096;
  pthread_mutex_lock(&lock);
  reserve();
  if (!next_device) { pthread_mutex_unlock(&lock); return MEMORY_ALLOCATION; }
  uintptr_t at = next_device + mapped + GUARD <= DEVICE_BASE + DEVICE_SPAN ? next_device : take_hole(mapped + GUARD);
  if (!at) { pthread_mutex_unlock(&lock); return MEMORY_ALLOCATION; }
  int fd = memfd_create("standin-device", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)mapped) != 0) { if (fd >= 0) close(fd); pthread_mutex_unlock(&lock); return MEMORY_ALLOCATION; }
  void *dev = mmap((void *)at, mapped, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
  void *alias = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (dev == MAP_FAILED || alias == MAP_FAILED) { pthread_mutex_unlock(&lock); return MEMORY_ALLOCATION; }
  alloc_t *a = calloc(1, sizeof *a);
  *a = (alloc_t){ (uintptr_t)dev, size, mapped, alias, current_device, 0, allocs };
  allocs = a;
  if (at == next_device) next_device += mapped + GUARD;
  pthread_mutex_unlock(&lock);
  *out = dev;
  return OK;
}

/* A freed range joins the holes, merged with the one before and after it when they touch. */
static void give_hole(uintptr_t base, size_t span) {
  hole_t *before = NULL, *after = NULL;
  for (hole_t *h = holes; h; h = h->next) {
    if (h->base + h->span == base) before = h;
    else if (base + span == h->base) after = h;
  }
  if (after) {
    for (hole_t **at = &holes; *at; at = &(*at)->next) if (*at == after) { *at = after->next; break; }
    span += after->span;
    free(after);
  }
  if (before) { before->span += span; return; }
  hole_t *h = malloc(sizeof *h);
  if (h) { *h = (hole_t){ base, span, holes }; holes = h; }
}

static int release(void *p, int host) {
  if (!p) return OK;
  pthread_mutex_lock(&lock);
  for (alloc_t **at = &allocs; *at; at = &(*at)->next) {
    alloc_t *a = *at;
    if (a->host == host && a->base == (uintptr_t)p) {
      *at = a->next;
      if (host) munmap(p, a->mapped);
      else {
        munmap(a->alias, a->mapped);
        /* Back to PROT_NONE reserved space: a use after free still faults (until reused). */
        mmap(p, a->mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        give_hole(a->base, a->mapped + GUARD);
      }
      free(a);
      pthread_mutex_unlock(&lock);
      return OK;
    }
  }
  pthread_mutex_unlock(&lock);
  return INVALID_VALUE;
}

int cudaFree(void *p) { return release(p, 0); }
int cudaFreeHost(void *p) { return release(p, 1); }

int cudaMallocHost(void **out, size_t size) {
  if (!out) return INVALID_VALUE;
  size_t mapped = (size + 4095) & ~(size_t)4095;
  if (mapped == 0) mapped = 4096;
  void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return MEMORY_ALLOCATION;
  alloc_t *a = calloc(1, sizeof *a);
  pthread_mutex_lock(&lock);
  *a = (alloc_t){ (uintptr_t)p, size, mapped, p, current_device, 1, allocs };
  allocs = a;
  pthread_mutex_unlock(&lock);
  *out = p;
  return OK;
}

/* struct cudaPointerAttributes (CUDA >= 11): type i32 @0, device i32 @4, devicePointer @8, hostPointer @16,
   then long reserved[8]. The real layout (CUDA 11-13, LP64: 88 bytes): cudart writes the whole struct, reserved words
   included, and so does the stand-in, so a caller's too-small buffer is overrun here too. */
struct attrs { int type; int device; void *devicePointer; void *hostPointer; long reserved[8]; };

int cudaPointerGetAttributes(struct attrs *out, const void *p) {
  if (!out) return INVALID_VALUE;
  pthread_mutex_lock(&lock);
  alloc_t *d = find((uintptr_t)p, 1, 0), *h = d ? NULL : find((uintptr_t)p, 1, 1);
  if (d) *out = (struct attrs){ 2, d->device, (void *)p, NULL };
  else if (h) *out = (struct attrs){ 1, h->device, (void *)p, (void *)p };
  else *out = (struct attrs){ 0, -2, NULL, (void *)p };
  pthread_mutex_unlock(&lock);
  return OK;
}

/* Resolve one side of a copy: where the stand-in may touch it, or NULL when the kind lies. */
static char *resolve(const void *p, size_t n, int want_device, int any) {
  alloc_t *d = find((uintptr_t)p, n, 0);
  if (d) return (want_device || any) ? d->alias + ((uintptr_t)p - d->base) : NULL;
  if (find((uintptr_t)p, 1, 0)) return NULL; /* starts in device memory but runs past its end */
  if ((uintptr_t)p >= DEVICE_BASE && (uintptr_t)p < DEVICE_BASE + DEVICE_SPAN) return NULL; /* freed or never allocated */
  return (!want_device || any) ? (char *)p : NULL;
}

static int copy_now(void *dst, const void *src, size_t n, int kind) {
  if (kind < H2H || kind > DEFAULT_KIND) return INVALID_VALUE;
  if (n == 0) return OK;
  if (!dst || !src) return INVALID_VALUE;
  int any = kind == DEFAULT_KIND;
  pthread_mutex_lock(&lock);
  char *d = resolve(dst, n, kind == H2D || kind == D2D, any);
  char *s = resolve(src, n, kind == D2H || kind == D2D, any);
  pthread_mutex_unlock(&lock);
  if (!d || !s) return INVALID_VALUE;
  memmove(d, s, n);
  return OK;
}

/* --- streams and events: a queue per stream, drained by its own thread --------------------- */

typedef struct event { volatile int done; int recorded; } event_t;
typedef struct op { int is_event; event_t *event; void *dst; const void *src; size_t n; int kind; struct op *next; } op_t;
typedef struct stream { pthread_mutex_t m; pthread_cond_t c, idle; op_t *head, *tail; int busy, stop, error; pthread_t thread; } stream_t;

static void *drain(void *arg) {
  stream_t *s = arg;
  pthread_mutex_lock(&s->m);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->c, &s->m);
    if (!s->head) break;
    op_t *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    s->busy = 1;
    pthread_mutex_unlock(&s->m);
    usleep(50); /* completion is later than the call, always */
    if (o->is_event) __atomic_store_n(&o->event->done, 1, __ATOMIC_RELEASE);
    else if (copy_now(o->dst, o->src, o->n, o->kind) != OK) s->error = INVALID_VALUE;
    free(o);
    pthread_mutex_lock(&s->m);
    s->busy = 0;
    pthread_cond_broadcast(&s->idle);
  }
  pthread_mutex_unlock(&s->m);
  return NULL;
}

static stream_t *new_stream(void) {
  stream_t *s = calloc(1, sizeof *s);
  pthread_mutex_init(&s->m, NULL);
  pthread_cond_init(&s->c, NULL);
  pthread_cond_init(&s->idle, NULL);
  pthread_create(&s->thread, NULL, drain, s);
  return s;
}

static stream_t *default_stream;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static void make_default(void) { default_stream = new_stream(); }
static stream_t *stream_of(void *h) { if (h) return h; pthread_once(&default_once, make_default); return default_stream; }

static void enqueue(stream_t *s, op_t *o) {
  pthread_mutex_lock(&s->m);
  if (s->tail) s->tail->next = o; else s->head = o;
  s->tail = o;
  pthread_cond_signal(&s->c);
  pthread_mutex_unlock(&s->m);
}

static void wait_idle(stream_t *s) {
  pthread_mutex_lock(&s->m);
  while (s->head || s->busy) pthread_cond_wait(&s->idle, &s->m);
  pthread_mutex_unlock(&s->m);
}

int cudaStreamCreate(void **out) { if (!out) return INVALID_VALUE; *out = new_stream(); return OK; }
int cudaStreamSynchronize(void *h) {
  stream_t *s = stream_of(h);
  wait_idle(s);
  int e = s->error;
  s->error = OK;
  return e;
}
int cudaStreamDestroy(void *h) {
  if (!h) return INVALID_HANDLE;
  stream_t *s = h;
  wait_idle(s);
  pthread_mutex_lock(&s->m);
  s->stop = 1;
  pthread_cond_signal(&s->c);
  pthread_mutex_unlock(&s->m);
  pthread_join(s->thread, NULL);
  free(s);
  return OK;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
  wait_idle(stream_of(NULL)); /* cudaMemcpy is ordered after the default stream's work */
  return copy_now(dst, src, n, kind);
}

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
  /* The checks a real runtime makes at the call: kind and pointers, then the copy runs later. */
  if (kind < H2H || kind > DEFAULT_KIND) return INVALID_VALUE;
  if (n && (!dst || !src)) return INVALID_VALUE;
  int any = kind == DEFAULT_KIND;
  pthread_mutex_lock(&lock);
  int ok = !n || (resolve(dst, n, kind == H2D || kind == D2D, any) && resolve(src, n, kind == D2H || kind == D2D, any));
  pthread_mutex_unlock(&lock);
  if (!ok) return INVALID_VALUE;
  op_t *o = calloc(1, sizeof *o);
  *o = (op_t){ 0, NULL, dst, src, n, kind, NULL };
  enqueue(stream_of(stream), o);
  return OK;
}

int cudaEventCreate(void **out) { if (!out) return INVALID_VALUE; event_t *e = calloc(1, sizeof *e); e->done = 1; *out = e; return OK; }
int cudaEventDestroy(void *e) { if (!e) return INVALID_HANDLE; free(e); return OK; }
int cudaEventRecord(void *h, void *stream) {
  if (!h) return INVALID_HANDLE;
  event_t *e = h;
  __atomic_store_n(&e->done, 0, __ATOMIC_RELEASE);
  e->recorded = 1;
  op_t *o = calloc(1, sizeof *o);
  *o = (op_t){ 1, e, NULL, NULL, 0, 0, NULL };
  enqueue(stream_of(stream), o);
  return OK;
}
int cudaEventQuery(void *h) { if (!h) return INVALID_HANDLE; return __atomic_load_n(&((event_t *)h)->done, __ATOMIC_ACQUIRE) ? OK : NOT_READY; }
int cudaEventSynchronize(void *h) {
  if (!h) return INVALID_HANDLE;
  while (!__atomic_load_n(&((event_t *)h)->done, __ATOMIC_ACQUIRE)) usleep(20);
  return OK;
}
