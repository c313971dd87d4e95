/*
 * The inner loop of the LDA E-step, in C, for skvi/_lda_fast.pyx.
 *
 * skvi_doc_iterate_d / skvi_doc_iterate_f run the fixed-point iterations of
 * one document (double / float).  The document's rows of exp(E[log beta])
 * arrive transposed, as K columns of `stride` words each (stride a multiple
 * of the vector width, the padding zero), so both halves of an iteration
 * are unit-stride vector loops over the words:
 *
 *     phinorm_j = sum_k e_theta_k * cols[k][j] + eps,   ratio_j = n_j / phinorm_j
 *     acc_k     = sum_j cols[k][j] * ratio_j
 *     gamma_k   = alpha_k + e_theta_k * acc_k
 *
 * with e_theta = exp(E[log theta]) (mean-field VB) or E[theta] (CVB0).
 * exp(psi(gamma)) is computed a vector at a time too (skvi_exp_psi_array:
 * the series below with a polynomial exp).  The loops are written with
 * GCC/Clang vector extensions and compiled several times: for AVX-512, for AVX2 with FMA, and for the baseline ISA;
 * skvi_lda_kernel_init() picks the widest the CPU runs.  Other compilers get
 * the scalar loops.
 */
#ifndef SKVI_LDA_KERNEL_H
#define SKVI_LDA_KERNEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The two pieces of psi, written once as expressions that hold for double
 * and for vector operands (the scalar and vector exp(psi) share them).
 *
 * SKVI_PSI_SERIES(inv, g): psi(x) - log(x) for x >= 6, with inv = 1/x and
 * g = inv**2; through the x**-12 term the relative error of exp(psi) is
 * below 2e-12.
 * SKVI_PSI_SHIFT(T, x, out): out = sum_{i<6} 1/(x + i), as one fraction of
 * three independent pairs (a fixed number of operations instead of a loop
 * with a data-dependent trip count), so that psi(x) = psi(x + 6) - out. */
#define SKVI_PSI_SERIES(inv, g)                                              \
    (-0.5 * (inv)                                                            \
     - (g) * (8.3333333333333333e-02                                         \
     - (g) * (8.3333333333333333e-03                                         \
     - (g) * (3.9682539682539683e-03                                         \
     - (g) * (4.1666666666666667e-03                                         \
     - (g) * (7.5757575757575758e-03                                         \
     - (g) * 2.1092796092796093e-02))))))
#define SKVI_PSI_SHIFT(T, x, out)                                            \
    do {                                                                     \
        T d1_ = (x) * ((x) + 1.0);                                           \
        T d2_ = ((x) + 2.0) * ((x) + 3.0);                                   \
        T d3_ = ((x) + 4.0) * ((x) + 5.0);                                   \
        (out) = (((2.0 * (x) + 1.0) * d2_ + (2.0 * (x) + 5.0) * d1_) * d3_  \
                 + (2.0 * (x) + 9.0) * (d1_ * d2_)) / ((d1_ * d2_) * d3_);  \
    } while (0)

/* exp(psi(x)) for x > 0 with one exp: x * exp(series(x)) for x >= 6 (no
 * logarithm needed), the shift below. */
static inline double skvi_exp_psi(double x)
{
    double shift = 0.0, inv, g;
    if (x < 6.0) {
        SKVI_PSI_SHIFT(double, x, shift);
        x += 6.0;
    }
    inv = 1.0 / x;
    g = inv * inv;
    return x * exp(SKVI_PSI_SERIES(inv, g) - shift);
}

/* psi(x) for x > 0, with a logarithm: the rare path of skvi_exp_dirichlet. */
static inline double skvi_psi(double x)
{
    double shift = 0.0, inv, g;
    if (x < 6.0) {
        SKVI_PSI_SHIFT(double, x, shift);
        x += 6.0;
    }
    inv = 1.0 / x;
    g = inv * inv;
    return log(x) + SKVI_PSI_SERIES(inv, g) - shift;
}

/* Below this Dirichlet total exp(psi(total)) nears underflow (psi(1e-3) is
 * about -1000, exp(-745) the smallest double): exp(psi(g_k) - psi(total))
 * is then computed as one exponential of the difference. */
#define SKVI_SMALL_TOTAL 0.01

/* Words per column block: 64 bytes of either type.  Column strides are
 * multiples of these, and buffers from skvi_align64 start on 64 bytes. */
#define SKVI_WIDTH_D 8
#define SKVI_WIDTH_F 16

static inline void *skvi_align64(void *p)
{
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

#if defined(__GNUC__) || defined(__clang__)
#  define SKVI_VECTOR_EXT 1
#endif
#if defined(SKVI_VECTOR_EXT) && (defined(__x86_64__) || defined(__i386__)) \
    && !defined(__INTEL_COMPILER)
#  define SKVI_X86_DISPATCH 1
#endif

/* One body per (type, ISA); see _lda_kernel_body.h.  The double body of
 * an ISA comes first: it also defines that ISA's skvi_exp_psi_array_<isa>,
 * which the float body calls. */
#define SKVI_ISA base
#define SKVI_VBYTES 16
#define SKVI_TARGET
#include "_lda_kernel_body.h"

#ifdef SKVI_X86_DISPATCH
#define SKVI_ISA avx2
#define SKVI_VBYTES 32
#define SKVI_TARGET __attribute__((target("avx2,fma")))
#include "_lda_kernel_body.h"

#define SKVI_ISA avx512
#define SKVI_VBYTES 64
#define SKVI_TARGET __attribute__((target("avx512f,avx2,fma")))
#include "_lda_kernel_body.h"
#endif

typedef int (*skvi_iterate_d_fn)(const double *, ptrdiff_t, ptrdiff_t, const double *,
                                 const double *, double *, double *, double *, double *,
                                 double *, int, double, double, int);
typedef int (*skvi_iterate_f_fn)(const float *, ptrdiff_t, ptrdiff_t, const float *,
                                 const float *, float *, float *, float *, float *,
                                 double *, int, double, float, int);

typedef void (*skvi_exp_psi_array_fn)(const double *, double *, ptrdiff_t);
typedef void (*skvi_ratio_d_fn)(const double *, ptrdiff_t, ptrdiff_t, const double *,
                                const double *, double *, double *, double);
typedef void (*skvi_ratio_f_fn)(const float *, ptrdiff_t, ptrdiff_t, const float *,
                                const float *, float *, float *, float);

static skvi_iterate_d_fn skvi_doc_iterate_d = skvi_doc_iterate_d_base;
static skvi_iterate_f_fn skvi_doc_iterate_f = skvi_doc_iterate_f_base;
static skvi_ratio_d_fn skvi_doc_ratio_d = skvi_doc_ratio_d_base;
static skvi_ratio_f_fn skvi_doc_ratio_f = skvi_doc_ratio_f_base;
/* out[i] = exp(psi(x[i])) for x[i] > 0; out may be x. */
static skvi_exp_psi_array_fn skvi_exp_psi_array = skvi_exp_psi_array_base;

/* Pick the widest variant this CPU runs; `level` caps it (0: baseline,
 * 1: AVX2, 2: AVX-512).  Returns the level chosen. */
static int skvi_lda_kernel_init(int level)
{
    int chosen = 0;
    skvi_doc_iterate_d = skvi_doc_iterate_d_base;
    skvi_doc_iterate_f = skvi_doc_iterate_f_base;
    skvi_exp_psi_array = skvi_exp_psi_array_base;
    skvi_doc_ratio_d = skvi_doc_ratio_d_base;
    skvi_doc_ratio_f = skvi_doc_ratio_f_base;
#ifdef SKVI_X86_DISPATCH
    __builtin_cpu_init();
    if (level >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        skvi_doc_iterate_d = skvi_doc_iterate_d_avx2;
        skvi_doc_iterate_f = skvi_doc_iterate_f_avx2;
        skvi_exp_psi_array = skvi_exp_psi_array_avx2;
        skvi_doc_ratio_d = skvi_doc_ratio_d_avx2;
        skvi_doc_ratio_f = skvi_doc_ratio_f_avx2;
        chosen = 1;
        if (level >= 2 && __builtin_cpu_supports("avx512f")) {
            skvi_doc_iterate_d = skvi_doc_iterate_d_avx512;
            skvi_doc_iterate_f = skvi_doc_iterate_f_avx512;
            skvi_exp_psi_array = skvi_exp_psi_array_avx512;
            skvi_doc_ratio_d = skvi_doc_ratio_d_avx512;
            skvi_doc_ratio_f = skvi_doc_ratio_f_avx512;
            chosen = 2;
        }
    }
#else
    (void)level;
#endif
    return chosen;
}

#endif /* SKVI_LDA_KERNEL_H */
