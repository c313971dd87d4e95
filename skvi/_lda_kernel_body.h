/*
 * One variant of the document iteration of _lda_kernel.h, included once per
 * (type, ISA) with SKVI_T (element type), SKVI_VBYTES (bytes of the ISA's
 * vector registers: 16, 32 or 64), SKVI_SUFFIX (name suffix) and SKVI_TARGET
 * (function attribute) defined; they are undefined again at the end.
 * Vectors wider than the target's registers would be kept in memory by the
 * compiler, so each variant uses its own register width.
 */
#define SKVI_CAT_(a, b) a##b
#define SKVI_CAT(a, b) SKVI_CAT_(a, b)
#define SKVI_FN SKVI_CAT(skvi_doc_iterate_, SKVI_SUFFIX)
#define SKVI_VL ((ptrdiff_t)(SKVI_VBYTES / sizeof(SKVI_T)))

#ifdef SKVI_VECTOR_EXT
#define SKVI_VT SKVI_CAT(skvi_block_, SKVI_SUFFIX)
typedef SKVI_T SKVI_VT __attribute__((vector_size(SKVI_VBYTES)));
#define SKVI_LOAD(p) (*(const SKVI_VT *)(p))
#endif

/*
 * Iterate document d's variational parameters until the mean absolute
 * change of gamma falls below tol, at most max_iter times.
 *
 * cols:    K columns of `stride` entries, 64-byte aligned: cols[k * stride
 *          + j] = exp(E[log beta_kw]) of the document's j-th word; zero
 *          beyond the document's words.
 * cnt:     stride counts, 64-byte aligned, zero beyond the words.
 * gamma:   K entries, updated in place; e_theta must hold
 *          exp(E[log theta]) of gamma on entry and holds it on return.
 * ratio:   scratch of stride entries, 64-byte aligned; acc: K entries.
 * Returns the number of iterations made.
 */
SKVI_TARGET static int SKVI_FN(
    const SKVI_T *cols, ptrdiff_t stride, ptrdiff_t K, const SKVI_T *cnt,
    const SKVI_T *alpha, SKVI_T *gamma, SKVI_T *e_theta, SKVI_T *ratio, SKVI_T *acc,
    int max_iter, double tol, SKVI_T eps)
{
    int it, n_iter = 0;
    ptrdiff_t j, k, i;
    for (it = 0; it < max_iter; it++) {
        double change = 0.0, total = 0.0, inv_total;
#ifdef SKVI_VECTOR_EXT
        /* ratio = cnt / (sum_k e_theta_k * cols_k + eps), four blocks of
         * words at a time so that four sums are in flight. */
        for (j = 0; j + 4 * SKVI_VL <= stride; j += 4 * SKVI_VL) {
            SKVI_VT s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (k = 0; k < K; k++) {
                const SKVI_T *c = cols + k * stride + j;
                SKVI_T e = e_theta[k];
                s0 += e * SKVI_LOAD(c);
                s1 += e * SKVI_LOAD(c + SKVI_VL);
                s2 += e * SKVI_LOAD(c + 2 * SKVI_VL);
                s3 += e * SKVI_LOAD(c + 3 * SKVI_VL);
            }
            *(SKVI_VT *)(ratio + j) = SKVI_LOAD(cnt + j) / (s0 + eps);
            *(SKVI_VT *)(ratio + j + SKVI_VL) = SKVI_LOAD(cnt + j + SKVI_VL) / (s1 + eps);
            *(SKVI_VT *)(ratio + j + 2 * SKVI_VL) = SKVI_LOAD(cnt + j + 2 * SKVI_VL) / (s2 + eps);
            *(SKVI_VT *)(ratio + j + 3 * SKVI_VL) = SKVI_LOAD(cnt + j + 3 * SKVI_VL) / (s3 + eps);
        }
        for (; j < stride; j += SKVI_VL) {
            SKVI_VT s0 = {0};
            for (k = 0; k < K; k++)
                s0 += e_theta[k] * SKVI_LOAD(cols + k * stride + j);
            *(SKVI_VT *)(ratio + j) = SKVI_LOAD(cnt + j) / (s0 + eps);
        }
        /* acc_k = cols_k . ratio, four topics at a time. */
        for (k = 0; k + 4 <= K; k += 4) {
            const SKVI_T *c0 = cols + k * stride;
            const SKVI_T *c1 = c0 + stride, *c2 = c1 + stride, *c3 = c2 + stride;
            SKVI_VT s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            SKVI_T t0 = 0, t1 = 0, t2 = 0, t3 = 0;
            for (j = 0; j < stride; j += SKVI_VL) {
                SKVI_VT r = SKVI_LOAD(ratio + j);
                s0 += SKVI_LOAD(c0 + j) * r;
                s1 += SKVI_LOAD(c1 + j) * r;
                s2 += SKVI_LOAD(c2 + j) * r;
                s3 += SKVI_LOAD(c3 + j) * r;
            }
            for (i = 0; i < SKVI_VL; i++) {
                t0 += s0[i];
                t1 += s1[i];
                t2 += s2[i];
                t3 += s3[i];
            }
            acc[k] = t0;
            acc[k + 1] = t1;
            acc[k + 2] = t2;
            acc[k + 3] = t3;
        }
        for (; k < K; k++) {
            const SKVI_T *c0 = cols + k * stride;
            SKVI_VT s0 = {0};
            SKVI_T t0 = 0;
            for (j = 0; j < stride; j += SKVI_VL)
                s0 += SKVI_LOAD(c0 + j) * SKVI_LOAD(ratio + j);
            for (i = 0; i < SKVI_VL; i++)
                t0 += s0[i];
            acc[k] = t0;
        }
#else
        for (j = 0; j < stride; j++) {
            SKVI_T s = 0;
            for (k = 0; k < K; k++)
                s += e_theta[k] * cols[k * stride + j];
            ratio[j] = cnt[j] / (s + eps);
        }
        for (k = 0; k < K; k++) {
            SKVI_T s = 0;
            for (j = 0; j < stride; j++)
                s += cols[k * stride + j] * ratio[j];
            acc[k] = s;
        }
#endif
        for (k = 0; k < K; k++) {
            SKVI_T updated = alpha[k] + e_theta[k] * acc[k];
            change += fabs((double)updated - (double)gamma[k]);
            gamma[k] = updated;
            total += gamma[k];
        }
        /* e_theta = exp(psi(gamma) - psi(sum gamma)), in double. */
        inv_total = 1.0 / skvi_exp_psi(total);
        for (k = 0; k < K; k++)
            e_theta[k] = (SKVI_T)(skvi_exp_psi(gamma[k]) * inv_total);
        n_iter++;
        if (change / K < tol)
            break;
    }
    return n_iter;
}

#ifdef SKVI_VECTOR_EXT
#undef SKVI_VT
#undef SKVI_LOAD
#endif
#undef SKVI_FN
#undef SKVI_VL
#undef SKVI_VBYTES
#undef SKVI_CAT
#undef SKVI_CAT_
#undef SKVI_T
#undef SKVI_SUFFIX
#undef SKVI_TARGET
