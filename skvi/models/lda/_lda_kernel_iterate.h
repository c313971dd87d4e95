/*
 * skvi_doc_iterate_<tc>_<isa> of _lda_kernel.h, included by
 * _lda_kernel_body.h once per element type with SKVI_T (double or float)
 * and SKVI_TC (d or f) defined, which are undefined again at the end.
 */
#define SKVI_FN SKVI_CAT(SKVI_CAT(SKVI_CAT(skvi_doc_iterate_, SKVI_TC), _), SKVI_ISA)
#define SKVI_RATIO SKVI_CAT(SKVI_CAT(SKVI_CAT(skvi_doc_ratio_, SKVI_TC), _), SKVI_ISA)
#define SKVI_VL ((ptrdiff_t)(SKVI_VBYTES / sizeof(SKVI_T)))

#ifdef SKVI_VECTOR_EXT
#define SKVI_VT SKVI_CAT(SKVI_CAT(skvi_vt_, SKVI_TC), SKVI_ISA)
typedef SKVI_T SKVI_VT __attribute__((vector_size(SKVI_VBYTES)));
#define SKVI_LOAD(p) (*(const SKVI_VT *)(p))
#endif

/*
 * ratio[j] = cnt[j] / phinorm[j], phinorm[j] = sum_k e_theta[k] * cols[k *
 * stride + j] + eps, for the `stride` words (see SKVI_FN below for the
 * layout); phinorm is stored too unless NULL (64-byte aligned).
 */
SKVI_TARGET static void SKVI_RATIO(
    const SKVI_T *cols, ptrdiff_t stride, ptrdiff_t K, const SKVI_T *cnt,
    const SKVI_T *e_theta, SKVI_T *ratio, SKVI_T *phinorm, SKVI_T eps)
{
    ptrdiff_t j, k;
#ifdef SKVI_VECTOR_EXT
    /* Four vectors of words at a time, so that four sums are in flight. */
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
        s0 += eps;
        s1 += eps;
        s2 += eps;
        s3 += eps;
        *(SKVI_VT *)(ratio + j) = SKVI_LOAD(cnt + j) / s0;
        *(SKVI_VT *)(ratio + j + SKVI_VL) = SKVI_LOAD(cnt + j + SKVI_VL) / s1;
        *(SKVI_VT *)(ratio + j + 2 * SKVI_VL) = SKVI_LOAD(cnt + j + 2 * SKVI_VL) / s2;
        *(SKVI_VT *)(ratio + j + 3 * SKVI_VL) = SKVI_LOAD(cnt + j + 3 * SKVI_VL) / s3;
        if (phinorm != NULL) {
            *(SKVI_VT *)(phinorm + j) = s0;
            *(SKVI_VT *)(phinorm + j + SKVI_VL) = s1;
            *(SKVI_VT *)(phinorm + j + 2 * SKVI_VL) = s2;
            *(SKVI_VT *)(phinorm + j + 3 * SKVI_VL) = s3;
        }
    }
    for (; j < stride; j += SKVI_VL) {
        SKVI_VT s0 = {0};
        for (k = 0; k < K; k++)
            s0 += e_theta[k] * SKVI_LOAD(cols + k * stride + j);
        s0 += eps;
        *(SKVI_VT *)(ratio + j) = SKVI_LOAD(cnt + j) / s0;
        if (phinorm != NULL)
            *(SKVI_VT *)(phinorm + j) = s0;
    }
#else
    for (j = 0; j < stride; j++) {
        SKVI_T s = 0;
        for (k = 0; k < K; k++)
            s += e_theta[k] * cols[k * stride + j];
        s += eps;
        ratio[j] = cnt[j] / s;
        if (phinorm != NULL)
            phinorm[j] = s;
    }
#endif
}

/*
 * Iterate one document's variational parameters until the mean absolute
 * change of gamma falls below tol, at most max_iter times.
 *
 * e_theta is exp(E[log theta]) of gamma (mean-field VB), or with
 * expected_theta nonzero E[theta] = gamma / sum(gamma) (the zero-order
 * collapsed update, CVB0, whose cols hold E[beta]).
 *
 * cols:    K columns of `stride` entries, 64-byte aligned: cols[k * stride
 *          + j] = exp(E[log beta_kw]) of the document's j-th word; zero
 *          beyond the document's words.
 * cnt:     stride counts, 64-byte aligned, zero beyond the words.
 * gamma:   K entries, updated in place; e_theta must hold
 *          exp(E[log theta]) of gamma on entry and holds it on return.
 * ratio:   scratch of stride entries, 64-byte aligned; acc: K entries;
 *          work: K doubles.
 * Returns the number of iterations made.
 */
SKVI_TARGET static int SKVI_FN(
    const SKVI_T *cols, ptrdiff_t stride, ptrdiff_t K, const SKVI_T *cnt,
    const SKVI_T *alpha, SKVI_T *gamma, SKVI_T *e_theta, SKVI_T *ratio, SKVI_T *acc,
    double *work, int max_iter, double tol, SKVI_T eps, int expected_theta)
{
    int it, n_iter = 0;
    ptrdiff_t j, k;
#ifdef SKVI_VECTOR_EXT
    ptrdiff_t i;
#endif
    for (it = 0; it < max_iter; it++) {
        double change = 0.0, total = 0.0, inv_total;
        SKVI_RATIO(cols, stride, K, cnt, e_theta, ratio, NULL, eps);
#ifdef SKVI_VECTOR_EXT
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
            work[k] = gamma[k];
        }
        /* e_theta = exp(psi(gamma) - psi(sum gamma)), in double, or E[theta]. */
        if (expected_theta) {
            inv_total = 1.0 / total;
            for (k = 0; k < K; k++)
                e_theta[k] = (SKVI_T)(work[k] * inv_total);
        } else if (total < SKVI_SMALL_TOTAL) {
            double psi_total = skvi_psi(total);
            for (k = 0; k < K; k++)
                e_theta[k] = (SKVI_T)exp(skvi_psi(work[k]) - psi_total);
        } else {
            SKVI_EXPPSI(work, work, K);
            inv_total = 1.0 / skvi_exp_psi(total);
            for (k = 0; k < K; k++)
                e_theta[k] = (SKVI_T)(work[k] * inv_total);
        }
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
#undef SKVI_RATIO
#undef SKVI_VL
#undef SKVI_T
#undef SKVI_TC
