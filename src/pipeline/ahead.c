/*
 * ahead.c — the decode-ahead thread (ahead.h): reads an epoch's records
 * from the source, copies each payload into a batch and decodes it there
 * with its own gate (fr_gate_copy_decode_to: the gate's first pass makes
 * the copy), so the rows' strings live in the batch too.
 *
 * A batch's bytes, per record, in order of use:
 *
 *   bytes          content
 *   -------------  ------------------------------------------------------
 *   len            the payload, as read from the log
 *   len            the gate's arena for this record's strings with escapes (only when
 *                  len <= max_event_bytes: bigger records are rejected as
 *                  oversize before anything is decoded)
 *   strlen + 1     the gate's detail, only for a rejected record
 *
 * Ring: AHEAD_BATCHES slots used in sequence. A slot is FREE (the producer
 * may fill it) or READY (filled, waiting for or held by the consumer):
 *
 *         producer fills, publishes          consumer releases
 *   FREE ───────────────────────────► READY ─────────────────► FREE
 *
 * prod_seq counts published batches, cons_seq released ones; slot
 * seq % AHEAD_BATCHES. Invariants: cons_seq <= prod_seq <= cons_seq +
 * AHEAD_BATCHES; the consumer holds at most one batch; once done is set the
 * producer touches nothing but its exit.
 *
 * Locking: mu guards the slot states, the sequence numbers and the
 * done/err/stop flags; cv is broadcast on every change. A slot's contents
 * belong to the producer while FREE and to the consumer while READY, so
 * they are read and written without the lock.
 */
#include "pipeline/ahead.h"

#include "core/err.h"
#include "core/mem.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_FREE = 0, SLOT_READY };

struct ahead_slot {
    struct fr_ahead_batch pub;
    struct fr_ahead_item *items; /* AHEAD_BATCH_ITEMS */
    char *bytes;                 /* its AHEAD_BATCH_BYTES of region, or own (malloc'ed) */
    size_t cap;
    int own; /* bytes grown past the region's share for one big record */
    int state;
};

struct fr_ahead {
    struct fr_gate *gate;
    size_t max_event;
    struct ahead_slot slots[AHEAD_BATCHES];
    /* The slots' bytes, AHEAD_BATCH_BYTES each, in one bulk mapping
     * (fr_mem_bulk_map: huge pages; a backfill fills every byte of it). */
    char *region;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running;
    uint64_t prod_seq, cons_seq;
    int done, err, stop;
    fr_ahead_source_fn source;
    fr_ahead_item_fn each; /* or NULL */
    void *arg;
};

int fr_ahead_create(const struct fr_gate_opts *gopts, struct fr_ahead **out)
{
    *out = NULL;
    struct fr_ahead *ahead = calloc(1, sizeof *ahead);
    if (!ahead) {
        return FR_ENOMEM;
    }
    int rc = fr_gate_create(gopts, &ahead->gate);
    ahead->max_event = gopts->max_event_bytes;
    pthread_mutex_init(&ahead->mu, NULL);
    pthread_cond_init(&ahead->cv, NULL);
    if (rc != FR_OK) {
        fr_ahead_destroy(ahead);
        return rc;
    }
    *out = ahead;
    return FR_OK;
}

void fr_ahead_destroy(struct fr_ahead *ahead)
{
    if (!ahead) {
        return;
    }
    fr_ahead_stop(ahead);
    fr_gate_destroy(ahead->gate);
    pthread_cond_destroy(&ahead->cv);
    pthread_mutex_destroy(&ahead->mu);
    free(ahead);
}

/* The batches' memory, between epochs: allocated by fr_ahead_start and
 * freed when the epoch ends (fr_ahead_stop), so ~13 MB touched by one
 * large epoch (catching up after a pause, in live mode) does not stay
 * resident through the small ones that follow (docs/adr/0023). */
static void slots_free(struct fr_ahead *ahead)
{
    for (int i = 0; i < AHEAD_BATCHES; i++) {
        struct ahead_slot *slot = &ahead->slots[i];
        free(slot->items);
        if (slot->own) {
            free(slot->bytes);
        }
        slot->items = slot->pub.items = NULL;
        slot->bytes = NULL;
        slot->cap = 0;
        slot->own = 0;
    }
    fr_mem_bulk_unmap(ahead->region, (size_t)AHEAD_BATCHES * AHEAD_BATCH_BYTES);
    ahead->region = NULL;
}

/* ---------------------------------------------------------------- producer */

/* Room for need bytes after used in slot: grow an empty batch for one big
 * record. 1: there is room, 0: the batch is full, < 0: no memory. */
static int slot_room(struct ahead_slot *slot, size_t used, size_t need)
{
    if (need <= slot->cap - used) {
        return 1;
    }
    if (slot->pub.n > 0) {
        return 0;
    }
    char *bytes = slot->own ? realloc(slot->bytes, need) : malloc(need);
    if (!bytes) {
        return FR_ENOMEM;
    }
    slot->bytes = bytes;
    slot->cap = need;
    slot->own = 1;
    return 1;
}

/* Fill slot from the source. *pending carries a record that did not fit
 * into the previous batch (its memory is still valid: the source has not
 * been called since). Returns 1 when the source has more, 0 at its end,
 * or an error. */
static int ahead_fill(struct fr_ahead *ahead, struct ahead_slot *slot, struct fr_log_rec *pending,
                      int32_t *pending_part, int *have_pending)
{
    if (slot->own) { /* grown for one big record: back to its share of the region */
        free(slot->bytes);
        slot->bytes = ahead->region + (size_t)(slot - ahead->slots) * AHEAD_BATCH_BYTES;
        slot->cap = AHEAD_BATCH_BYTES;
        slot->own = 0;
    }
    slot->pub.n = 0;
    size_t used = 0;
    while (slot->pub.n < AHEAD_BATCH_ITEMS) {
        struct fr_log_rec rec;
        int32_t part = 0;
        if (*have_pending) {
            rec = *pending;
            part = *pending_part;
            *have_pending = 0;
        } else {
            int rc = ahead->source(ahead->arg, &rec, &part);
            if (rc <= 0) {
                return rc;
            }
        }
        size_t len = rec.payload_len;
        size_t need = len + (len <= ahead->max_event ? len : 0) + FR_GATE_DETAIL_MAX;
        int room = slot_room(slot, used, need);
        if (room < 0) {
            return room;
        }
        if (room == 0) {
            *pending = rec;
            *pending_part = part;
            *have_pending = 1;
            return 1;
        }
        struct fr_ahead_item *item = &slot->items[slot->pub.n++];
        char *raw = slot->bytes + used;
        used += len;
        item->pos = (struct fr_proc_pos){part, rec.offset, rec.append_time};
        item->raw = raw;
        item->raw_len = len;
        item->detail = NULL;
        char detail[FR_GATE_DETAIL_MAX];
        detail[0] = 0;
        /* The payload is copied into the batch by the gate's first pass. */
        item->reason = fr_gate_copy_decode_to(ahead->gate, &item->pos, rec.payload, raw, len,
                                              &item->row, detail, slot->bytes + used);
        if (len <= ahead->max_event) {
            used += len;
        }
        if (item->reason != FR_GATE_OK) {
            size_t dlen = strnlen(detail, FR_GATE_DETAIL_MAX - 1);
            char *d = slot->bytes + used;
            memcpy(d, detail, dlen);
            d[dlen] = 0;
            item->detail = d;
            used += dlen + 1;
        }
        if (ahead->each) {
            int rc = ahead->each(ahead->arg, item);
            if (rc < 0) {
                slot->pub.n--; /* every record handed out went through each */
                return rc;
            }
        }
    }
    return 1;
}

static void *ahead_main(void *arg)
{
    struct fr_ahead *ahead = arg;
    /* Signals (SIGTERM: finish the epoch) are the epoch loop's to take. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct fr_log_rec pending;
    int32_t pending_part = 0;
    int have_pending = 0;
    for (;;) {
        pthread_mutex_lock(&ahead->mu);
        struct ahead_slot *slot = &ahead->slots[ahead->prod_seq % AHEAD_BATCHES];
        while (!ahead->stop && slot->state != SLOT_FREE) {
            pthread_cond_wait(&ahead->cv, &ahead->mu);
        }
        int stop = ahead->stop;
        pthread_mutex_unlock(&ahead->mu);
        if (stop) {
            break;
        }
        int rc = ahead_fill(ahead, slot, &pending, &pending_part, &have_pending);
        pthread_mutex_lock(&ahead->mu);
        if (slot->pub.n > 0) {
            slot->state = SLOT_READY;
            ahead->prod_seq++;
        }
        if (rc <= 0) {
            ahead->done = 1;
            ahead->err = rc;
        }
        pthread_cond_broadcast(&ahead->cv);
        pthread_mutex_unlock(&ahead->mu);
        if (rc <= 0) {
            break;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- consumer */

int fr_ahead_start(struct fr_ahead *ahead, fr_ahead_source_fn source, fr_ahead_item_fn each,
                   void *arg)
{
    if (ahead->running) {
        return FR_ESTATE;
    }
    ahead->source = source;
    ahead->each = each;
    ahead->arg = arg;
    ahead->prod_seq = ahead->cons_seq = 0;
    ahead->done = ahead->err = ahead->stop = 0;
    if (!ahead->region) {
        ahead->region = fr_mem_bulk_map((size_t)AHEAD_BATCHES * AHEAD_BATCH_BYTES);
    }
    for (int i = 0; i < AHEAD_BATCHES; i++) {
        struct ahead_slot *slot = &ahead->slots[i];
        slot->state = SLOT_FREE;
        if (!slot->items) {
            slot->items = malloc(AHEAD_BATCH_ITEMS * sizeof *slot->items);
            slot->pub.items = slot->items;
        }
        if (!slot->bytes && ahead->region) {
            slot->bytes = ahead->region + (size_t)i * AHEAD_BATCH_BYTES;
            slot->cap = AHEAD_BATCH_BYTES;
            slot->own = 0;
        }
        if (!slot->items || !slot->bytes) {
            slots_free(ahead);
            return FR_ENOMEM;
        }
    }
    if (pthread_create(&ahead->thread, NULL, ahead_main, ahead) != 0) {
        slots_free(ahead);
        return FR_EAGAIN;
    }
    ahead->running = 1;
    return FR_OK;
}

int fr_ahead_next(struct fr_ahead *ahead, const struct fr_ahead_batch **batch)
{
    *batch = NULL;
    pthread_mutex_lock(&ahead->mu);
    struct ahead_slot *slot = &ahead->slots[ahead->cons_seq % AHEAD_BATCHES];
    while (!(ahead->cons_seq < ahead->prod_seq && slot->state == SLOT_READY) &&
           !(ahead->done && ahead->cons_seq == ahead->prod_seq)) {
        pthread_cond_wait(&ahead->cv, &ahead->mu);
    }
    int rc;
    if (ahead->cons_seq < ahead->prod_seq) {
        *batch = &slot->pub;
        rc = 1;
    } else {
        rc = ahead->err;
    }
    pthread_mutex_unlock(&ahead->mu);
    return rc;
}

void fr_ahead_release(struct fr_ahead *ahead, const struct fr_ahead_batch *batch)
{
    pthread_mutex_lock(&ahead->mu);
    struct ahead_slot *slot = &ahead->slots[ahead->cons_seq % AHEAD_BATCHES];
    if (batch == &slot->pub && slot->state == SLOT_READY) {
        slot->state = SLOT_FREE;
        ahead->cons_seq++;
        pthread_cond_broadcast(&ahead->cv);
    }
    pthread_mutex_unlock(&ahead->mu);
}

void fr_ahead_stop(struct fr_ahead *ahead)
{
    if (!ahead->running) {
        slots_free(ahead);
        return;
    }
    pthread_mutex_lock(&ahead->mu);
    ahead->stop = 1;
    pthread_cond_broadcast(&ahead->cv);
    pthread_mutex_unlock(&ahead->mu);
    pthread_join(ahead->thread, NULL);
    ahead->running = 0;
    slots_free(ahead);
}
