/*
 * limit.c — the client's token bucket (requests per second), its backoff
 * schedule and the choice of the next batch. Pure arithmetic on times the caller passes in, so the
 * unit tests drive them with a fake clock. One client, one thread.
 *
 * Invariants: 0 <= tokens <= burst; a take succeeds only with tokens >= 1;
 * a clock that goes backwards never adds tokens (last_ms only moves forward).
 */
#include "enrich/enrich_int.h"

#include <string.h>

void fr_enrich_bucket_init(struct fr_enrich_bucket *b, double rate, double burst, int64_t now_ms)
{
    b->rate = rate > 0 ? rate : 0;
    b->burst = burst >= 1 ? burst : 1;
    b->tokens = b->burst;
    b->last_ms = now_ms;
}

int64_t fr_enrich_bucket_take(struct fr_enrich_bucket *b, int64_t now_ms)
{
    if (b->rate <= 0) {
        return 0;
    }
    if (now_ms > b->last_ms) {
        b->tokens += (double)(now_ms - b->last_ms) * b->rate / 1000.0;
        if (b->tokens > b->burst) {
            b->tokens = b->burst;
        }
        b->last_ms = now_ms;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return 0;
    }
    /* Time until the bucket holds one whole token, rounded up. */
    double ms = (1.0 - b->tokens) * 1000.0 / b->rate;
    int64_t wait = (int64_t)ms;
    return wait < ms ? wait + 1 : (wait < 1 ? 1 : wait);
}

static uint64_t limit_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t fr_enrich_backoff_ms(int attempt, int min_ms, int max_ms, uint64_t *rng)
{
    int64_t base = min_ms > 0 ? min_ms : 1;
    for (int i = 1; i < attempt && base < max_ms; i++) {
        base *= 2;
    }
    if (base > max_ms) {
        base = max_ms;
    }
    int64_t half = base / 2;
    return half + (int64_t)(limit_next(rng) % (uint64_t)(base - half + 1));
}

size_t fr_enrich_batch_pick(const struct fr_enrich_cand *cand, size_t n, int64_t now,
                            int batch_titles, size_t max_keys, size_t *out, int *ntitles,
                            int64_t *wake)
{
    size_t nout = 0, first = n;
    int distinct = 0;
    *wake = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (cand[i].ready_ms > now) {
            *wake = cand[i].ready_ms < *wake ? cand[i].ready_ms : *wake;
            continue;
        }
        if (first == n) {
            first = i;
        } else if (strcmp(cand[i].wiki, cand[first].wiki) != 0) {
            continue;
        }
        if (nout == max_keys) {
            break;
        }
        int seen = 0;
        for (size_t j = 0; j < nout && !seen; j++) {
            seen = strcmp(cand[out[j]].title, cand[i].title) == 0;
        }
        if (!seen) {
            if (distinct == batch_titles) {
                continue; /* the batch is full; riders of titles in it may still join */
            }
            distinct++;
        }
        out[nout++] = i;
    }
    *ntitles = distinct;
    return nout;
}
