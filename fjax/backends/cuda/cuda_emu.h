// fjax CUDA emulation header: compiles fjax's generated CUDA C with a host C++ compiler
// (g++ -x c++ -DFJAX_EMULATE) and runs its kernels on the CPU, for verification without a GPU.
//
// Every CUDA thread of a block is a ucontext fiber with its own stack; blocks run one after
// another. __syncthreads() and the warp-level __shfl_down_sync() are barriers: a fiber that
// reaches one yields to the block's scheduler until every live thread of the block (warp) has
// arrived, so code between barriers runs in the same phases as on a GPU, and shared memory
// (__shared__ = a static local: one copy, shared by the block's fibers) sees the same values.
// Threads that have exited no longer count at __syncthreads; a warp shuffle needs all its lanes. Atomics are plain read-modify-writes
// (fibers never interleave inside one). Device math names are the C library's.
//
// FJAX_EMU_ORDER (read at each launch) sets the order blocks run in and the order the scheduler
// resumes a block's threads in every pass: "forward" (the default: 0, 1, 2, ...), "reverse", or
// "shuffle" (a fresh pseudo-random permutation per block and per pass, seeded by FJAX_EMU_SEED).
// A GPU guarantees no order: a kernel whose results change with it reads what another thread
// writes between the same two barriers, or what another block writes (a race).
#ifndef FJAX_CUDA_EMU_H
#define FJAX_CUDA_EMU_H

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

using std::isfinite;
using std::isinf;
using std::isnan;

struct dim3 {
  unsigned int x, y, z;
};

// CUDA's vector types (16- or 8-byte aligned structs) and their make_ functions
#define FJEMU_VEC2(T, N, A)                      \
  struct alignas(A) N {                          \
    T x, y;                                      \
  };                                             \
  inline N make_##N(T x, T y) { return N{x, y}; }
#define FJEMU_VEC4(T, N, A)                                  \
  struct alignas(A) N {                                      \
    T x, y, z, w;                                            \
  };                                                         \
  inline N make_##N(T x, T y, T z, T w) { return N{x, y, z, w}; }
FJEMU_VEC2(float, float2, 8)
FJEMU_VEC4(float, float4, 16)
FJEMU_VEC2(int, int2, 8)
FJEMU_VEC4(int, int4, 16)
FJEMU_VEC2(unsigned int, uint2, 8)
FJEMU_VEC4(unsigned int, uint4, 16)
FJEMU_VEC2(double, double2, 16)
FJEMU_VEC2(long long, longlong2, 16)
FJEMU_VEC2(unsigned long long, ulonglong2, 16)
#undef FJEMU_VEC2
#undef FJEMU_VEC4

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

namespace fjemu {

struct Fiber {
  ucontext_t ctx;
  dim3 tid;
  int linear;
  bool done;
};

static thread_local Fiber* cur = nullptr;
static thread_local ucontext_t sched;
static thread_local const std::function<void()>* body = nullptr;
static thread_local dim3 block_idx, block_dim, grid_dim;
static thread_local int nthreads = 0, alive = 0, arrived = 0;
static thread_local unsigned int generation = 0;
static thread_local int warp_size[32], warp_arrived[32];
static thread_local unsigned int warp_gen[32];
static thread_local unsigned long long slots[1024];
// bumped by every barrier arrival, release and thread exit: a scheduler pass over the block that
// leaves it unchanged means every live thread waits at a barrier no other can reach (a deadlock,
// e.g. a shuffle some lanes of a warp skip); the launch then fails instead of hanging
static thread_local unsigned long long events = 0;

inline void yield() { swapcontext(&cur->ctx, &sched); }

inline void release_if_complete() {
  ++events;
  if (arrived > 0 && arrived >= alive) {
    arrived = 0;
    ++generation;
  }
}

// a warp-synchronous operation (full mask) needs every lane of the warp: a lane that has exited
// never arrives, so its warp deadlocks (reported), as it is undefined on a GPU
inline void release_warp_if_complete(int w) {
  ++events;
  if (warp_arrived[w] > 0 && warp_arrived[w] >= warp_size[w]) {
    warp_arrived[w] = 0;
    ++warp_gen[w];
  }
}

inline void syncthreads() {
  unsigned int g = generation;
  ++arrived;
  release_if_complete();
  while (generation == g) yield();
}

inline void syncwarp() {
  int w = cur->linear >> 5;
  unsigned int g = warp_gen[w];
  ++warp_arrived[w];
  release_warp_if_complete(w);
  while (warp_gen[w] == g) yield();
}

inline void entry() {
  (*body)();
  cur->done = true;
  --alive;
  release_if_complete();
  // returning resumes ``sched`` (uc_link)
}

static const size_t kStack = 64 * 1024;

// the run order (FJAX_EMU_ORDER): 0 forward, 1 reverse, 2 shuffle
static thread_local int order_mode = 0;
static thread_local unsigned long long order_state = 0;

inline void read_order() {
  const char* m = std::getenv("FJAX_EMU_ORDER");
  order_mode = !m ? 0 : (std::strcmp(m, "reverse") == 0 ? 1 : (std::strcmp(m, "shuffle") == 0 ? 2 : 0));
  const char* seed = std::getenv("FJAX_EMU_SEED");
  order_state = 0x9E3779B97F4A7C15ull ^ (seed ? std::strtoull(seed, nullptr, 10) : 0ull);
}

inline unsigned long long next_random() {  // splitmix64
  unsigned long long z = (order_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// ``perm`` (0 .. n-1) in the run order
inline void arrange(std::vector<int>& perm) {
  int n = (int)perm.size();
  for (int i = 0; i < n; ++i) perm[i] = order_mode == 1 ? n - 1 - i : i;
  if (order_mode == 2)
    for (int i = n - 1; i > 0; --i) std::swap(perm[i], perm[(int)(next_random() % (unsigned long long)(i + 1))]);
}

// Run ``f`` as every thread of every block of a grid: 0, or 1 for a barrier deadlock, 2 for a
// block size out of range.
inline int launch(dim3 g, dim3 b, const std::function<void()>& f) {
  int n = (int)(b.x * b.y * b.z);
  if (n <= 0 || n > 1024) return 2;
  std::vector<Fiber> fibers(n);
  std::vector<char> stacks((size_t)n * kStack);
  body = &f;
  grid_dim = g;
  block_dim = b;
  nthreads = n;
  read_order();
  unsigned long long nblocks = (unsigned long long)g.x * g.y * g.z;
  std::vector<int> thread_order(n);
  // blocks in the run order (a permutation of up to 2^31 blocks; grids here are far smaller)
  std::vector<int> block_order(order_mode == 0 ? 0 : (size_t)nblocks);
  if (order_mode != 0) arrange(block_order);
  for (unsigned long long bi = 0; bi < nblocks; ++bi) {
        unsigned long long bl = order_mode == 0 ? bi : (unsigned long long)block_order[bi];
        unsigned int bx = (unsigned int)(bl % g.x), by = (unsigned int)((bl / g.x) % g.y);
        unsigned int bz = (unsigned int)(bl / ((unsigned long long)g.x * g.y));
        block_idx = dim3{bx, by, bz};
        alive = n;
        arrived = 0;
        for (int w = 0; w < 32; ++w) {
          warp_size[w] = 0;
          warp_arrived[w] = 0;
        }
        for (int i = 0; i < n; ++i) {
          Fiber& fb = fibers[i];
          fb.linear = i;
          fb.done = false;
          fb.tid = dim3{(unsigned)i % b.x, ((unsigned)i / b.x) % b.y, (unsigned)i / (b.x * b.y)};
          ++warp_size[i >> 5];
          getcontext(&fb.ctx);
          fb.ctx.uc_stack.ss_sp = &stacks[(size_t)i * kStack];
          fb.ctx.uc_stack.ss_size = kStack;
          fb.ctx.uc_link = &sched;
          makecontext(&fb.ctx, (void (*)())entry, 0);
        }
        int left = n;
        int idle_passes = 0;
        while (left > 0) {
          left = 0;
          unsigned long long before = events;
          arrange(thread_order);
          for (int k = 0; k < n; ++k) {
            int i = thread_order[k];
            if (fibers[i].done) continue;
            cur = &fibers[i];
            swapcontext(&sched, &fibers[i].ctx);
            if (!fibers[i].done) ++left;
          }
          idle_passes = (events == before) ? idle_passes + 1 : 0;
          if (left > 0 && idle_passes >= 2) {
            cur = nullptr;
            return 1;
          }
        }
  }
  cur = nullptr;
  return 0;
}

}  // namespace fjemu

#define threadIdx (fjemu::cur->tid)
#define blockIdx (fjemu::block_idx)
#define blockDim (fjemu::block_dim)
#define gridDim (fjemu::grid_dim)

inline void __syncthreads() { fjemu::syncthreads(); }
inline void __syncwarp(unsigned int = 0xffffffffu) { fjemu::syncwarp(); }

template <typename T>
inline T __shfl_down_sync(unsigned int, T v, int delta) {
  static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
  int t = fjemu::cur->linear;
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  fjemu::slots[t] = bits;
  fjemu::syncwarp();
  T r = v;
  int lane = t & 31;
  if (lane + delta < 32 && t + delta < fjemu::nthreads) std::memcpy(&r, &fjemu::slots[t + delta], sizeof(T));
  fjemu::syncwarp();
  return r;
}

template <typename T, typename V>
inline T atomicAdd(T* p, V v) {
  T old = *p;
  *p = (T)(old + (T)v);
  return old;
}
template <typename T>
inline T atomicCAS(T* p, T compare, T val) {
  T old = *p;
  if (old == compare) *p = val;
  return old;
}
template <typename T, typename V>
inline T atomicMin(T* p, V v) {
  T old = *p;
  if ((T)v < old) *p = (T)v;
  return old;
}
template <typename T, typename V>
inline T atomicMax(T* p, V v) {
  T old = *p;
  if ((T)v > old) *p = (T)v;
  return old;
}

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  std::memcpy(&i, &f, 4);
  return i;
}
inline float __uint_as_float(unsigned int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned int __float_as_uint(float f) {
  unsigned int i;
  std::memcpy(&i, &f, 4);
  return i;
}
// CUDA's erfinv/erfinvf (not in the C library): Winitzki's approximation, then Newton steps
inline double erfinv(double y) {
  if (!(y > -1.0 && y < 1.0)) return y == 1.0 ? HUGE_VAL : (y == -1.0 ? -HUGE_VAL : NAN);
  if (y == 0.0) return y;
  const double a = 0.147, l = std::log((1.0 - y) * (1.0 + y)), t = 2.0 / (3.14159265358979323846 * a) + l / 2.0;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - l / a) - t), y);
  for (int i = 0; i < 4; ++i) {
    const double d = 1.1283791670955126 * std::exp(-x * x);
    if (d == 0.0) break;
    x -= (std::erf(x) - y) / d;
  }
  return x;
}
inline float erfinvf(float y) { return (float)erfinv((double)y); }
inline long long __double_as_longlong(double f) {
  long long i;
  std::memcpy(&i, &f, 8);
  return i;
}
inline double __longlong_as_double(long long i) {
  double f;
  std::memcpy(&f, &i, 8);
  return f;
}
// CUDA's round-to-nearest products: never contracted into an fma (the emulator compiles with
// -ffp-contract=off, so a plain product is the same)
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }

// CUDA's erfcx and normcdfinv (not in the C library), for the emulator: exp(x^2) erfc(x) directly
// up to 25, its asymptotic series above; the normal quantile by Newton steps on erfc
inline double erfcx(double x) {
  if (x != x) return x;
  if (x <= 25.0) return std::exp(x * x) * std::erfc(x);
  const double z = 1.0 / (2.0 * x * x);
  double term = 1.0, s = 1.0;
  for (int k = 1; k < 12; ++k) { term *= -(2.0 * k - 1.0) * z; s += term; }
  return s / (x * 1.7724538509055160);
}
inline double normcdfinv(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return NAN;
  if (p == 0.0) return -HUGE_VAL;
  if (p == 1.0) return HUGE_VAL;
  const bool lower = p < 0.5;
  const double q = lower ? p : 1.0 - p;  // the tail probability
  double x = -std::sqrt(-2.0 * std::log(q));  // (a start in the tail's direction)
  if (q > 1e-3) x = std::sqrt(2.0) * erfinv(2.0 * q - 1.0);
  for (int i = 0; i < 60; ++i) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * x * x) / 2.5066282746310002;
    if (pdf == 0.0) break;
    const double dx = (cdf - q) / pdf;
    x -= dx;
    if (std::fabs(dx) <= 1e-16 * std::fabs(x)) break;
  }
  return lower ? x : -x;
}
// CUDA's bit-counting intrinsics (defined at 0, unlike the GCC builtins)
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }

#endif  // FJAX_CUDA_EMU_H
