/*
 * gen_int.h — private to the generator (gen.c, gen_comment.c): the state of
 * one event under construction and the helpers the two files share.
 * Everything here lives for one fr_feed_gen_render call on one thread.
 */
#ifndef FR_FEED_GEN_INT_H
#define FR_FEED_GEN_INT_H

#include "feed/feed_int.h"

enum gen_type { GEN_EDIT = 0, GEN_CATEGORIZE, GEN_LOG, GEN_NEW, GEN_NTYPES };

/* Who does what where: shared by the events of one session. */
struct gen_session {
    int type;
    size_t wiki;
    int bot;
    int user_kind; /* 0 named, 1 temporary account, 2 IPv4, 3 IPv6 */
    uint64_t user;
    uint64_t theme; /* seeds the session's comment template and title stems */
    int ui;         /* interface language of the editor (Wikibase messages) */
};

struct gen_ev {
    const struct fr_feed_gen *gen;
    int64_t pos, ts_ms;
    struct gen_session s;
    const struct fr_feed_wiki *wiki;
    const struct fr_feed_lang *lang;
    struct fr_feed_rng r;  /* this event */
    struct fr_feed_rng th; /* the session's theme: the same for every event of it */
    int ns;
    struct fr_buf title, comment, parsed, user, lac, params, tmp;
    const char *wb; /* Wikibase autocomment text, or NULL */
    char wb_buf[160];
    int has_user, has_rc, has_patrolled, patrolled, minor;
    int64_t rc_id, len_old, len_new, rev_old, rev_new, log_id, timestamp_s;
    const char *log_type, *log_action;
    uint64_t req_key; /* nonzero: request_id shared by a fan-out of events */
};

/* Any wiki of the Wikipedia family, by weight (for other-language text). */
const struct fr_feed_wiki *fr_feed_gen_any_wiki(struct fr_feed_rng *rng);
/* The Wikipedia of language code (enwiki when there is none). */
const struct fr_feed_wiki *fr_feed_gen_wiki_of(const char *code);
int fr_feed_gen_user_name(struct gen_ev *ev, struct fr_buf *out, int kind, uint64_t index, int bot);
int fr_feed_gen_prefix(struct fr_buf *out, const char *name);
const char *fr_feed_gen_project(const struct gen_ev *ev);
int fr_feed_gen_category_name(struct gen_ev *ev, struct fr_buf *out, struct fr_feed_rng *rng);
/* The edit summary of an edit or new event (gen_comment.c). */
int fr_feed_gen_comment(struct gen_ev *ev, struct fr_buf *out);
/* ev->parsed from ev->comment, with Wikibase entity links and redlinks. */
int fr_feed_gen_parsed(struct gen_ev *ev);
/* Number of interface languages with Wikibase messages. */
int fr_feed_gen_ui_count(void);

#endif
