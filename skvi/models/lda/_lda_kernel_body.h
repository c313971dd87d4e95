/*
 * The vector kernels of _lda_kernel.h for one ISA, included once per ISA
 * with SKVI_ISA (name suffix), SKVI_VBYTES (bytes of the ISA's vector
 * registers: 16, 32 or 64) and SKVI_TARGET (function attribute) defined;
 * they are undefined again at the end.  Vectors wider than the target's
 * registers would be kept in memory by the compiler, so each ISA uses its
 * own register width.
 *
 * Defines skvi_exp_psi_array_<isa> and skvi_doc_iterate_{d,f}_<isa>.
 */
#define SKVI_CAT_(a, b) a##b
#define SKVI_CAT(a, b) SKVI_CAT_(a, b)
#define SKVI_EXPPSI SKVI_CAT(skvi_exp_psi_array_, SKVI_ISA)
#define SKVI_VLD ((ptrdiff_t)(SKVI_VBYTES / sizeof(double)))

#ifdef SKVI_VECTOR_EXT
#define SKVI_VD SKVI_CAT(skvi_vd_, SKVI_ISA)
#define SKVI_VI SKVI_CAT(skvi_vi_, SKVI_ISA)
typedef double SKVI_VD __attribute__((vector_size(SKVI_VBYTES)));
typedef long long SKVI_VI __attribute__((vector_size(SKVI_VBYTES)));
#endif

/* out[i] = exp(psi(x[i])) for x[i] > 0 (out may be x): skvi_exp_psi a
 * vector at a time, with exp(y) = 2**n * p(y - n log 2), p the Taylor
 * polynomial of degree 13 (relative error below 2e-16 on |r| <= log(2)/2),
 * y clamped below at -708 (where exp(psi(x)) is under 1e-307). */
SKVI_TARGET static void SKVI_EXPPSI(const double *x, double *out, ptrdiff_t n)
{
    ptrdiff_t i = 0, m;
#ifdef SKVI_VECTOR_EXT
    double pad[SKVI_VBYTES / sizeof(double)];
    for (; i < n; i += SKVI_VLD) {
        SKVI_VD v, frac, xs, shift, inv, g, y, t, nf, r, p;
        SKVI_VI small, low;
        const SKVI_VD zero = {0};
        m = n - i < SKVI_VLD ? n - i : SKVI_VLD;
        if (m < SKVI_VLD) {  /* the tail, padded with ones */
            ptrdiff_t q;
            for (q = 0; q < SKVI_VLD; q++)
                pad[q] = q < m ? x[i + q] : 1.0;
            memcpy(&v, pad, sizeof v);
        } else {
            memcpy(&v, x + i, sizeof v);
        }
        /* psi(x) = psi(x + 6) - sum_{i<6} 1/(x + i) below 6 */
        small = v < 6.0;
        SKVI_PSI_SHIFT(SKVI_VD, v, frac);
        xs = (SKVI_VD)((small & (SKVI_VI)(v + 6.0)) | (~small & (SKVI_VI)v));
        shift = (SKVI_VD)(small & (SKVI_VI)frac);
        inv = 1.0 / xs;
        g = inv * inv;
        y = SKVI_PSI_SERIES(inv, g) - shift;
        low = y < -708.0;
        y = (SKVI_VD)((low & (SKVI_VI)(zero - 708.0)) | (~low & (SKVI_VI)y));
        /* n = round(y / log 2) by the 1.5 * 2**52 trick; t's low bits hold n */
        t = y * 1.4426950408889634 + 6755399441055744.0;
        nf = t - 6755399441055744.0;
        r = (y - nf * 6.93147180369123816490e-01) - nf * 1.90821492927058770002e-10;
        p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120
            + r * (1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880
            + r * (1.0 / 3628800 + r * (1.0 / 39916800 + r * (1.0 / 479001600
            + r * (1.0 / 6227020800.0)))))))))))));
        p = xs * p * (SKVI_VD)((((SKVI_VI)t) + 1023) << 52);
        if (m < SKVI_VLD) {
            ptrdiff_t q;
            memcpy(pad, &p, sizeof p);
            for (q = 0; q < m; q++)
                out[i + q] = pad[q];
        } else {
            memcpy(out + i, &p, sizeof p);
        }
    }
#else
    (void)m;
    for (; i < n; i++)
        out[i] = skvi_exp_psi(x[i]);
#endif
}

#define SKVI_T double
#define SKVI_TC d
#include "_lda_kernel_iterate.h"
#define SKVI_T float
#define SKVI_TC f
#include "_lda_kernel_iterate.h"

#ifdef SKVI_VECTOR_EXT
#undef SKVI_VD
#undef SKVI_VI
#endif
#undef SKVI_EXPPSI
#undef SKVI_VLD
#undef SKVI_CAT
#undef SKVI_CAT_
#undef SKVI_ISA
#undef SKVI_VBYTES
#undef SKVI_TARGET
