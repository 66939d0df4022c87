/*
 * gen_comment.c — edit summaries and their HTML rendering for the
 * synthetic generator.
 *
 * Summaries follow the styles seen in the recorded events, per project:
 * Wikibase autocomments on Wikidata (weighted as measured: item updates,
 * descriptions, claims, labels, sitelinks, ...), HotCat / Cat-a-lot /
 * structured-data edits on Commons, section edits, reverts, bot runs,
 * templates, quotes and emoji on the other wikis. A session's theme picks
 * the template, so one bot run repeats one summary shape as real runs do.
 *
 * parsedcomment: the generic formatter is in gen_text.c; this file adds
 * what depends on the event — Wikibase entity links rendered with labels
 * and descriptions in the editor's interface language (wrapped in U+200E
 * marks, as Wikidata does), localized Wikibase messages (French with its
 * narrow no-break space before the colon), and links to missing pages
 * rendered as redlinks.
 *
 * Runs inside one fr_feed_gen_render call: thread-safe.
 */
#include "feed/gen_int.h"

#include "core/err.h"

#include <stdio.h>
#include <string.h>

/* ---- Wikibase messages per interface language ------------------------ */

struct gen_wb_msgs {
    const char *code, *sep;
    const char *entity_update, *claim_create, *claim_update, *label_add, *desc_add, *desc_set,
        *alias_add, *ref_add, *multi, *sitelink_add, *claim_remove, *qual_add, *item_create,
        *lang_short;
};

static const struct gen_wb_msgs gen_wb[] = {
    {"en", ": ", "Updated Item", "Created claim", "Changed claim", "Added [%s] label",
     "Added [%s] description", "Changed [%s] description", "Added [%s] alias",
     "Added reference to claim", "Changed statements for %d properties", "Added link to [%s]",
     "Removed claim", "Added qualifier", "Created a new Item",
     "Changed label, description and/or aliases in %s"},
    {"it", ": ", "Elemento aggiornato", "Creata asserzione", "Modificata asserzione",
     "Aggiunta etichetta [%s]", "Aggiunta descrizione [%s]", "Modificata descrizione [%s]",
     "Aggiunto alias [%s]", "Aggiunto riferimento a un'asserzione",
     "Modificate dichiarazioni per %d proprietà", "Aggiunto collegamento a [%s]",
     "Rimossa asserzione", "Aggiunto qualificatore", "Creato un nuovo elemento",
     "Modificati etichetta, descrizione e/o alias in %s"},
    {"fr", "\u202f: ", "Élément mis à jour", "Déclaration créée", "Déclaration modifiée",
     "Libellé [%s] ajouté", "Description [%s] ajoutée", "Description [%s] modifiée",
     "Alias [%s] ajouté", "Référence ajoutée à la déclaration",
     "Déclarations modifiées pour %d propriétés", "Lien ajouté vers [%s]", "Déclaration supprimée",
     "Qualificatif ajouté", "Nouvel élément créé",
     "Libellé, description et/ou alias modifiés en %s"},
    {"bn", ": ", "আইটেম হালনাগাদ", "দাবি তৈরি", "দাবি পরিবর্তিত", "[%s] লেবেল যোগ হয়েছে",
     "[%s] বিবরণ যোগ হয়েছে", "[%s] বিবরণ পরিবর্তিত", "[%s] উপনাম যোগ হয়েছে",
     "দাবিতে তথ্যসূত্র যোগ হয়েছে", "%dটি বৈশিষ্ট্যের বিবৃতি পরিবর্তিত", "[%s]-এ সংযোগ যোগ হয়েছে",
     "দাবি সরানো হয়েছে", "বাছাইকারী যোগ হয়েছে", "নতুন আইটেম তৈরি",
     "%s-এ লেবেল, বিবরণ ও/বা উপনাম পরিবর্তিত"},
    {"he", ": ", "עודכן פריט", "נוצרה טענה", "שונתה טענה", "נוספה תווית [%s]", "נוסף תיאור [%s]",
     "שונה תיאור [%s]", "נוסף כינוי [%s]", "נוסף מקור לטענה", "שונו טענות עבור %d מאפיינים",
     "נוסף קישור אל [%s]", "הוסרה טענה", "נוסף מגדיר", "נוצר פריט חדש",
     "שונו תווית, תיאור ו/או כינויים ב־%s"},
    {"de", ": ", "Objekt aktualisiert", "Aussage erstellt", "Aussage geändert",
     "Bezeichnung für [%s] hinzugefügt", "Beschreibung für [%s] hinzugefügt",
     "Beschreibung für [%s] geändert", "Alias für [%s] hinzugefügt",
     "Fundstelle zu Aussage hinzugefügt", "Aussagen für %d Eigenschaften geändert",
     "Link zu [%s] hinzugefügt", "Aussage entfernt", "Qualifikator hinzugefügt",
     "Neues Objekt erstellt", "Bezeichnung, Beschreibung und/oder Aliasse in %s geändert"},
    {"es", ": ", "Elemento actualizado", "Declaración creada", "Declaración cambiada",
     "Añadida etiqueta [%s]", "Añadida descripción [%s]", "Cambiada descripción [%s]",
     "Añadido alias [%s]", "Añadida referencia a declaración",
     "Cambiadas declaraciones de %d propiedades", "Añadido enlace a [%s]", "Eliminada declaración",
     "Añadido calificador", "Creado un nuevo elemento",
     "Cambiadas etiqueta, descripción y/o alias en %s"},
    {"ja", ": ", "項目を更新", "主張を作成", "主張を変更", "ラベル [%s] を追加", "説明 [%s] を追加",
     "説明 [%s] を変更", "別名 [%s] を追加", "主張に出典を追加", "%d 個のプロパティの文を変更",
     "[%s] へのリンクを追加", "主張を除去", "修飾子を追加", "新しい項目を作成",
     "%s でのラベル、説明、別名を変更"},
    {"ru", ": ", "Обновлён элемент", "Создано утверждение", "Изменено утверждение",
     "Добавлена метка [%s]", "Добавлено описание [%s]", "Изменено описание [%s]",
     "Добавлен псевдоним [%s]", "Добавлен источник к утверждению",
     "Изменены утверждения для %d свойств", "Добавлена ссылка на [%s]", "Удалено утверждение",
     "Добавлен квалификатор", "Создан новый элемент",
     "Изменены метка, описание и/или псевдонимы на %s"},
};

int fr_feed_gen_ui_count(void)
{
    return (int)(sizeof gen_wb / sizeof gen_wb[0]);
}

/* Term languages of labels and descriptions, most used first. */
static const char *const gen_terms[] = {"en", "fr", "de", "mul", "es", "it", "nl",
                                        "ru", "as", "ja", "zh",  "ar", "pt", "pl",
                                        "sv", "uk", "ko", "he",  "bn", "ca"};

/* Set ev->wb from a message with an optional %s (language) or %d. */
static void gen_wb_set(struct gen_ev *ev, const char *fmt, const char *lc, int n)
{
    if (strstr(fmt, "%d")) {
        snprintf(ev->wb_buf, sizeof ev->wb_buf, fmt, n);
    } else if (strstr(fmt, "%s")) {
        snprintf(ev->wb_buf, sizeof ev->wb_buf, fmt, lc);
    } else {
        snprintf(ev->wb_buf, sizeof ev->wb_buf, "%s", fmt);
    }
    ev->wb = ev->wb_buf;
}

static int gen_words_in(struct fr_buf *out, const char *code, int n, struct fr_feed_rng *rng)
{
    return fr_feed_text_words(out, fr_feed_gen_wiki_of(code), rng, n, 0);
}

static int gen_comment_wikidata(struct gen_ev *ev, struct fr_buf *c)
{
    struct fr_feed_rng *r = &ev->r, *th = &ev->th;
    const struct gen_wb_msgs *m = &gen_wb[ev->s.ui];
    int rc;
    if (ev->s.type == GEN_NEW) {
        gen_wb_set(ev, m->item_create, NULL, 0);
        rc = fr_buf_puts(c, "/* wbeditentity-create-item:0| */");
        if (rc == FR_OK && fr_feed_rng_unit(r) < 0.5) {
            rc = fr_buf_putc(c, ' ');
            if (rc == FR_OK) {
                rc = gen_words_in(c, m->code, (int)fr_feed_rng_range(r, 1, 4), r);
            }
        }
        return rc;
    }
    const char *lc = fr_feed_rng_unit(th) < 0.6
                         ? m->code
                         : gen_terms[fr_feed_rng_zipf(th, sizeof gen_terms / sizeof gen_terms[0])];
    const char *text_lc = strcmp(lc, "mul") == 0 ? "en" : lc;
    int batch = (int)fr_feed_rng_range(th, 20000, 260000);
    int prop = (int)(fr_feed_rng_zipf(th, 14000) + 17);
    long long item = (long long)fr_feed_rng_zipf(r, 130000000) + 1;
    /* Template weights follow the sample's autocomment counts. */
    static const int weight[] = {30, 15, 13, 11, 6, 5, 3, 3, 2, 2, 2, 3, 2, 2};
    int total = 0, k = 0;
    for (size_t i = 0; i < sizeof weight / sizeof weight[0]; i++) {
        total += weight[i];
    }
    for (int u = (int)fr_feed_rng_below(th, (uint64_t)total); u >= weight[k]; k++) {
        u -= weight[k];
    }
    switch (k) {
    case 0:
        gen_wb_set(ev, m->entity_update, NULL, 0);
        if (fr_feed_rng_unit(th) < 0.8) {
            rc = fr_buf_printf(c,
                               "/* wbeditentity-update:0| */ QuickStatements 3.0 "
                               "[[:toollabs:qs-dev/batch/%d|batch #%d]]: ",
                               batch, batch);
            return rc == FR_OK ? gen_words_in(c, "en", (int)fr_feed_rng_range(th, 1, 4), th) : rc;
        }
        rc = fr_buf_puts(c, "/* wbeditentity-update:0| */ [[User:");
        if (rc == FR_OK) {
            rc = fr_feed_gen_user_name(ev, c, 0, ev->s.user, ev->s.bot);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(c,
                               "/log/%d/configuration|Modify PubMed ID]]: %d citation data from "
                               "NCBI, Europe PMC and CrossRef",
                               (int)fr_feed_rng_range(th, 20200101, 20260630),
                               (int)fr_feed_rng_range(r, 100000, 9999999));
        }
        return rc;
    case 1:
    case 6:
        gen_wb_set(ev, k == 1 ? m->desc_add : m->desc_set, lc, 0);
        rc = fr_buf_printf(c, "/* wbsetdescription-%s:1|%s */ ", k == 1 ? "add" : "set", lc);
        /* Descriptions in a run are near copies ("province historique du Japon"). */
        return rc == FR_OK ? gen_words_in(c, text_lc, (int)fr_feed_rng_range(th, 2, 6),
                                          fr_feed_rng_unit(r) < 0.7 ? th : r)
                           : rc;
    case 2:
        gen_wb_set(ev, m->claim_create, NULL, 0);
        rc = fr_buf_printf(c, "/* wbcreateclaim-create:1| */ [[Property:P%d]]: %lld", prop,
                           (long long)fr_feed_rng_range(r, 1000, 99999999));
        return rc == FR_OK && fr_feed_rng_unit(th) < 0.5
                   ? fr_buf_printf(c, ", [[:toollabs:quickstatements/#/batch/%d|batch #%d]]", batch,
                                   batch)
                   : rc;
    case 3:
        gen_wb_set(ev, m->claim_create, NULL, 0);
        return fr_buf_printf(c, "/* wbsetclaim-create:2||1 */ [[Property:P%d]]: [[Q%lld]]", prop,
                             item);
    case 4:
        gen_wb_set(ev, m->label_add, lc, 0);
        rc = fr_buf_printf(c, "/* wbsetlabel-add:1|%s */ ", lc);
        return rc == FR_OK ? gen_words_in(c, text_lc, (int)fr_feed_rng_range(r, 1, 4), r) : rc;
    case 5:
        gen_wb_set(ev, m->claim_update, NULL, 0);
        return fr_buf_printf(c, "/* wbsetclaim-update:2||1 */ [[Property:P%d]]: [[Q%lld]]", prop,
                             item);
    case 7:
        gen_wb_set(ev, m->sitelink_add, lc, 0);
        rc = fr_buf_printf(c, "/* wbsetsitelink-add:1|%swiki */ ", text_lc);
        return rc == FR_OK ? fr_feed_text_phrase(c, fr_feed_gen_wiki_of(text_lc), r) : rc;
    case 8:
        gen_wb_set(ev, m->claim_remove, NULL, 0);
        return fr_buf_printf(c, "/* wbremoveclaims-remove:1| */ [[Property:P%d]]: [[Q%lld]]", prop,
                             item);
    case 9:
        gen_wb_set(ev, m->lang_short, lc, 0);
        return fr_buf_printf(c, "/* wbeditentity-update-languages-short:0||%s */", lc);
    case 10:
        gen_wb_set(ev, m->alias_add, lc, 0);
        rc = fr_buf_printf(c, "/* wbsetaliases-add:1|%s */ ", lc);
        return rc == FR_OK ? gen_words_in(c, text_lc, (int)fr_feed_rng_range(r, 1, 3), r) : rc;
    case 11: {
        int n = (int)fr_feed_rng_range(r, 2, 14);
        gen_wb_set(ev, m->multi, NULL, n);
        rc = fr_buf_printf(
            c, "/* wbeditentity-statements-multiple-properties-update:0||%d */ [[User:", n);
        if (rc == FR_OK) {
            rc = fr_feed_gen_user_name(ev, c, 0, ev->s.user, 1);
        }
        return rc == FR_OK ? fr_buf_printf(c,
                                           "/log/%d/configuration|Modify PubMed ID]]: %d citation "
                                           "data from NCBI, Europe PMC and CrossRef",
                                           (int)fr_feed_rng_range(th, 20200101, 20260630),
                                           (int)fr_feed_rng_range(r, 100000, 9999999))
                           : rc;
    }
    case 12:
        gen_wb_set(ev, m->ref_add, NULL, 0);
        return fr_buf_printf(c,
                             "/* wbsetreference-add:2| */ [[Property:P%d]]: [[Q%lld]], Added with "
                             "[[User:Bargioni/UseAsRef|UseAsRef2.0]]",
                             prop, item);
    default:
        gen_wb_set(ev, m->qual_add, NULL, 0);
        return fr_buf_printf(c, "/* wbsetqualifier-add:1| */ [[Property:P%d]]: %d", prop,
                             (int)fr_feed_rng_range(r, 1700, 2026));
    }
}

static int gen_comment_commons(struct gen_ev *ev, struct fr_buf *c)
{
    const struct fr_feed_wiki *en = fr_feed_gen_wiki_of("en");
    struct fr_feed_rng *r = &ev->r, *th = &ev->th;
    int rc = FR_OK;
    switch (fr_feed_rng_below(th, 14)) {
    case 0: {
        const char *lc = gen_terms[fr_feed_rng_zipf(th, sizeof gen_terms / sizeof gen_terms[0])];
        gen_wb_set(ev, gen_wb[0].lang_short, lc, 0);
        return fr_buf_printf(c, "/* wbeditentity-update-languages-and-other-short:0||%s */", lc);
    }
    case 1:
    case 2: {
        struct fr_feed_rng from = *th;
        rc = fr_buf_puts(c, fr_feed_rng_unit(th) < 0.5
                                ? "Moving from [[Category:"
                                : "[[Commons:Cat-a-lot|Cat-a-lot]]: Moving from [[Category:");
        if (rc == FR_OK) {
            rc = fr_feed_gen_category_name(ev, c, &from);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, "]] to [[Category:");
        }
        if (rc == FR_OK) {
            rc = fr_feed_gen_category_name(ev, c, &from);
        }
        return rc == FR_OK ? fr_buf_puts(c, "]]") : rc;
    }
    case 3: {
        int n = (int)fr_feed_rng_range(r, 2, 16);
        gen_wb_set(ev, gen_wb[0].multi, NULL, n);
        return fr_buf_printf(c,
                             "/* wbeditentity-statements-multiple-properties-update:0||%d */ "
                             "Updating structured data claims from [[COM:DPLA|DPLA]] item",
                             n);
    }
    case 4:
    case 5: {
        static const char *const verb[] = {"added", "removed", "added", "added"};
        rc = fr_buf_printf(
            c, "[[Commons:HotCat|HotCat]]: %s [[Category:", verb[fr_feed_rng_below(r, 4)]);
        if (rc == FR_OK) {
            rc = fr_feed_gen_category_name(ev, c, fr_feed_rng_unit(r) < 0.5 ? th : r);
        }
        return rc == FR_OK ? fr_buf_puts(c, "]]") : rc;
    }
    case 6:
        gen_wb_set(ev, "Changed an entity", NULL, 0);
        return fr_buf_puts(c,
                           "/* wbeditentity-update:0| */ automatically adding "
                           "[[Commons:Structured data|structured data]] based on file information");
    case 7:
        rc = fr_buf_puts(c, "/* Summary */");
        if (rc == FR_OK && fr_feed_rng_unit(r) < 0.5) {
            rc = fr_buf_putc(c, ' ');
            if (rc == FR_OK) {
                rc = fr_feed_text_words(c, en, r, (int)fr_feed_rng_range(r, 2, 8), 0);
            }
        }
        return rc;
    case 8:
        gen_wb_set(ev, gen_wb[0].claim_create, NULL, 0);
        return fr_buf_printf(c,
                             "/* wbsetclaim-create:2||1 */ [[d:Special:EntityPage/P%d]]: "
                             "[[d:Special:EntityPage/Q%lld]]",
                             fr_feed_rng_unit(th) < 0.7 ? 180 : 1071,
                             (long long)fr_feed_rng_zipf(r, 120000000) + 1);
    case 9:
        return fr_buf_puts(
            c, fr_feed_rng_unit(th) < 0.5
                   ? "Strip {{DPLA metadata}} template parameters now redundant with SDC "
                     "(values match what Module:DPLA renders from the structured data)."
                   : "Migrate legacy {{Artwork}} to {{DPLA metadata}} per DPLA SDC sync.");
    case 10:
    case 11: {
        struct fr_feed_rng from = *th;
        rc = fr_buf_puts(c, "+[[Category:");
        if (rc == FR_OK) {
            rc = fr_feed_gen_category_name(ev, c, &from);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, "]], (-[[Category:");
        }
        if (rc == FR_OK) {
            rc = fr_feed_gen_category_name(ev, c, fr_feed_rng_unit(r) < 0.5 ? &from : r);
        }
        return rc == FR_OK ? fr_buf_puts(c, "]])") : rc;
    }
    case 12:
        if (fr_feed_rng_unit(r) < 0.2) {
            return FR_OK; /* empty */
        }
        return fr_feed_text_words(c, en, r, (int)fr_feed_rng_range(r, 3, 16), 1);
    default:
        rc = fr_buf_puts(c, "Adding [[Category:");
        if (rc == FR_OK) {
            rc = fr_feed_gen_category_name(ev, c, th);
        }
        return rc == FR_OK ? fr_buf_puts(c, "]]") : rc;
    }
}

static int gen_undo(struct gen_ev *ev, struct fr_buf *c)
{
    struct fr_buf name;
    fr_buf_init(&name, 512);
    int rc = fr_feed_gen_user_name(ev, &name, 0, fr_feed_rng_zipf(&ev->r, 300000), 0);
    const char *u = fr_buf_cstr(&name);
    long long rev = (long long)(ev->rev_new - (int64_t)fr_feed_rng_below(&ev->r, 100000));
    const char *code = ev->wiki->code;
    if (rc == FR_OK) {
        if (strcmp(code, "de") == 0) {
            rc = fr_buf_printf(c,
                               "Änderung %lld von [[Special:Contributions/%s|%s]] "
                               "([[Benutzer Diskussion:%s|Diskussion]]) rückgängig gemacht.",
                               rev, u, u, u);
        } else if (strcmp(code, "fr") == 0) {
            rc = fr_buf_printf(c,
                               "Annulation de la modification %lld de "
                               "[[Special:Contributions/%s|%s]] ([[User talk:%s|d]])",
                               rev, u, u, u);
        } else if (strcmp(code, "ru") == 0) {
            rc = fr_buf_printf(c,
                               "Отмена правки %lld, сделанной [[Special:Contributions/%s|%s]] "
                               "([[UT:%s|обс.]])",
                               rev, u, u, u);
        } else if (fr_feed_rng_unit(&ev->r) < 0.5) {
            rc = fr_buf_printf(c,
                               "Undid revision %lld by [[Special:Contributions/%s|%s]] "
                               "([[User talk:%s|talk]])",
                               rev, u, u, u);
        } else {
            rc = fr_buf_printf(
                c,
                "Reverted edits by [[Special:Contribs/%s|%s]] ([[User talk:%s|talk]]) "
                "to last version by ",
                u, u, u);
            if (rc == FR_OK) {
                rc = fr_feed_text_user(c, ev->gen->seed, fr_feed_rng_zipf(&ev->r, 300000), 0);
            }
        }
    }
    fr_buf_free(&name);
    return rc;
}

static int gen_comment_new(struct gen_ev *ev, struct fr_buf *c)
{
    struct fr_feed_rng *r = &ev->r, *th = &ev->th;
    const struct fr_feed_wiki *w = ev->wiki;
    int rc = FR_OK;
    if (w->family == FR_FEED_WS) {
        return fr_buf_puts(c, ev->s.bot && strcmp(w->code, "hi") == 0 ? "बॉट: OCR से निर्मित पृष्ठ"
                                                                      : "/* Not proofread */");
    }
    if (w->family == FR_FEED_WIKT && strcmp(w->code, "fr") == 0) {
        rc = fr_buf_puts(c, "création d'une entrée en ");
        return rc == FR_OK ? fr_feed_text_word(c, fr_feed_gen_any_wiki(th), th, 0) : rc;
    }
    double u = fr_feed_rng_unit(r);
    if (u < 0.12) {
        return FR_OK;
    }
    if (u < 0.25) {
        rc = fr_buf_puts(c, "Redirected page to [[");
        if (rc == FR_OK) {
            rc = fr_feed_text_phrase(c, w, r);
        }
        return rc == FR_OK ? fr_buf_puts(c, "]]") : rc;
    }
    /* MediaWiki's autosummary quotes the start of the new page. */
    struct fr_buf text;
    fr_buf_init(&text, 4096);
    double v = fr_feed_rng_unit(r);
    if (v < 0.4) {
        rc = fr_buf_puts(&text, "'''");
        if (rc == FR_OK) {
            rc = fr_feed_text_phrase(&text, w, r);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(&text, "''' ");
        }
    } else if (v < 0.7) {
        rc = fr_buf_puts(&text, "{{Infobox ");
        if (rc == FR_OK) {
            rc = fr_feed_text_word(&text, w, r, 0);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(&text, " | name = ");
        }
    }
    if (rc == FR_OK) {
        rc = fr_feed_text_words(&text, w, r, (int)fr_feed_rng_range(r, 6, 30), 0);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(c, ev->lang->created, fr_buf_cstr(&text));
    }
    fr_buf_free(&text);
    return rc;
}

static int gen_comment_wiki(struct gen_ev *ev, struct fr_buf *c)
{
    struct fr_feed_rng *r = &ev->r, *th = &ev->th;
    const struct fr_feed_wiki *w = ev->wiki;
    int rc = FR_OK;
    if (w->family == FR_FEED_WS && fr_feed_rng_unit(th) < 0.6) {
        static const char *const status[] = {"/* Proofread */", "/* Not proofread */",
                                             "/* Validated */", "/* Problematic */"};
        return fr_buf_puts(c, status[fr_feed_rng_below(th, 4)]);
    }
    if (w->family == FR_FEED_WIKT && fr_feed_rng_unit(th) < 0.5) {
        rc = fr_buf_puts(c, "/* ");
        if (rc == FR_OK) {
            rc = fr_feed_text_word(c, w, th, 1);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, " */ +[[");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(c, fr_feed_gen_any_wiki(r), r, 0);
        }
        return rc == FR_OK ? fr_buf_puts(c, "]]") : rc;
    }
    int en = strcmp(w->code, "en") == 0;
    switch (fr_feed_rng_below(th, 20)) {
    case 0:
    case 1:
    case 2:
        return FR_OK;
    case 3:
    case 4:
    case 5:
    case 6:
        rc = fr_buf_puts(c, "/* ");
        if (rc == FR_OK) {
            rc = fr_feed_text_phrase(c, w, fr_feed_rng_unit(r) < 0.5 ? th : r);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, " */");
        }
        if (rc == FR_OK && fr_feed_rng_unit(r) < 0.7) {
            rc = fr_buf_putc(c, ' ');
            if (rc == FR_OK) {
                rc = fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 2, 14), 0);
            }
        }
        return rc;
    case 7:
    case 8:
    case 9:
    case 10:
        /* Now and then a summary near MediaWiki's 500-character limit. */
        return fr_feed_text_words(c, w, r,
                                  fr_feed_rng_unit(r) < 0.05 ? (int)fr_feed_rng_range(r, 30, 70)
                                                             : (int)fr_feed_rng_range(r, 2, 18),
                                  1);
    case 11:
        return gen_undo(ev, c);
    case 12:
        if (ev->s.bot) {
            if (en && fr_feed_rng_unit(th) < 0.5) {
                return fr_buf_printf(
                    c, "Rescuing %d sources and tagging %d as dead.) #IABot (v2.0.9.5",
                    (int)fr_feed_rng_range(r, 1, 12), (int)fr_feed_rng_range(r, 0, 3));
            }
            rc = fr_buf_puts(c, "Bot: ");
            return rc == FR_OK ? fr_feed_text_words(c, w, th, (int)fr_feed_rng_range(th, 2, 8), 0)
                               : rc;
        }
        return fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 1, 8), 1);
    case 13:
        rc = fr_buf_puts(c, fr_feed_rng_unit(r) < 0.5 ? "+{{" : "{{");
        if (rc == FR_OK) {
            rc = fr_feed_text_word(c, w, th, 1);
        }
        return rc == FR_OK ? fr_buf_puts(c, "}}") : rc;
    case 14:
        rc = fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 1, 8), 1);
        if (rc == FR_OK) {
            rc = fr_buf_putc(c, ' ');
        }
        return rc == FR_OK ? fr_feed_text_emoji(c, r) : rc;
    case 15:
        rc = fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 1, 5), 1);
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, " \"");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 1, 5), 0);
        }
        return rc == FR_OK ? fr_buf_puts(c, "\"") : rc;
    case 16:
        rc = fr_buf_puts(c, "/* ");
        if (rc == FR_OK) {
            rc = fr_feed_text_phrase(c, w, r);
        }
        return rc == FR_OK ? fr_buf_puts(c, " */") : rc;
    case 17:
        if (en) {
            rc = fr_buf_puts(c, "clean up, [[WP:AWB/T|typo(s) fixed]]: ");
            if (rc == FR_OK) {
                rc = fr_feed_text_word(c, w, r, 0);
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(c, " → ");
            }
            return rc == FR_OK ? fr_feed_text_word(c, w, r, 0) : rc;
        }
        return fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 2, 10), 1);
    case 18:
        rc = fr_buf_puts(c, "[[");
        if (rc == FR_OK) {
            rc = fr_feed_gen_prefix(c, fr_feed_gen_project(ev));
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(c, w, th, 1);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, "|");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(c, w, th, 0);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(c, "]] ");
        }
        return rc == FR_OK ? fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 1, 10), 0) : rc;
    default:
        rc = fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 1, 6), 1);
        return rc == FR_OK
                   ? fr_buf_printf(c, " #%s",
                                   fr_feed_rng_unit(th) < 0.5 ? "WPWP" : "suggestededit-add 1.0")
                   : rc;
    }
}

int fr_feed_gen_comment(struct gen_ev *ev, struct fr_buf *out)
{
    if (ev->wiki->family == FR_FEED_WIKIDATA) {
        return gen_comment_wikidata(ev, out);
    }
    if (ev->s.type == GEN_NEW) {
        return gen_comment_new(ev, out);
    }
    if (ev->wiki->family == FR_FEED_COMMONS) {
        return gen_comment_commons(ev, out);
    }
    return gen_comment_wiki(ev, out);
}

/* ---- parsedcomment ---------------------------------------------------- */

/* "Q123" or "Property:P45" (nothing else): its letter and number. */
static int gen_entity(const char *t, size_t len, char *letter, long long *id)
{
    if (len > 9 && memcmp(t, "Property:", 9) == 0) {
        t += 9;
        len -= 9;
    }
    if (len < 2 || (t[0] != 'Q' && t[0] != 'P')) {
        return 0;
    }
    long long v = 0;
    for (size_t i = 1; i < len; i++) {
        if (t[i] < '0' || t[i] > '9' || i > 12) {
            return 0;
        }
        v = v * 10 + (t[i] - '0');
    }
    *letter = t[0];
    *id = v;
    return 1;
}

static int gen_link(void *ctx, struct fr_buf *out, const char *t, size_t tlen, const char *label,
                    size_t llen)
{
    struct gen_ev *ev = ctx;
    char letter;
    long long id;
    int rc;
    if (ev->wiki->family == FR_FEED_WIKIDATA && gen_entity(t, tlen, &letter, &id)) {
        /* Wikidata renders entity links with the label and description in
         * the reader's language; the same entity always gets the same words. */
        const struct gen_wb_msgs *m = &gen_wb[ev->s.ui];
        const struct fr_feed_wiki *w = fr_feed_gen_wiki_of(m->code);
        struct fr_feed_rng er;
        fr_feed_rng_seed(&er, 0x77696b6964617461ULL, (uint64_t)id, (uint64_t)letter);
        struct fr_buf lab, desc;
        fr_buf_init(&lab, 1024);
        fr_buf_init(&desc, 2048);
        rc = fr_feed_text_words(&lab, w, &er, 1 + (int)fr_feed_rng_below(&er, 3), 0);
        if (rc == FR_OK) {
            rc = fr_feed_text_words(&desc, w, &er, 3 + (int)fr_feed_rng_below(&er, 10), 0);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "<a href=\"/wiki/");
        }
        if (rc == FR_OK) {
            rc = fr_buf_append(out, t, tlen);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "\" title=\"\u200e");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, (const char *)lab.data, lab.len);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "\u200e | \u200e");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, (const char *)desc.data, desc.len);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(
                out,
                "\u200e\"><span class=\"wb-itemlink\"><span class=\"wb-itemlink-label\" "
                "lang=\"%s\" dir=\"%s\">",
                m->code, w->rtl ? "rtl" : "ltr");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, (const char *)lab.data, lab.len);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out,
                               "</span> <span class=\"wb-itemlink-id\">(%c%lld)</span></span></a>",
                               letter, id);
        }
        fr_buf_free(&lab);
        fr_buf_free(&desc);
        return rc < 0 ? rc : 1;
    }
    if (strncmp(t, "Special:", 8) == 0 || fr_feed_rng_unit(&ev->r) >= 0.07) {
        return 0;
    }
    /* A link to a page that does not exist. */
    rc = fr_buf_puts(out, "<a href=\"/w/index.php?title=");
    if (rc == FR_OK) {
        rc = fr_feed_text_urlencode(out, t, tlen);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "&amp;action=edit&amp;redlink=1\" class=\"new\" title=\"");
    }
    if (rc == FR_OK) {
        rc = fr_feed_text_html_escape(out, t, tlen);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, " (page does not exist)\">");
    }
    if (rc == FR_OK) {
        rc = fr_feed_text_html_escape(out, label, llen);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "</a>");
    }
    return rc < 0 ? rc : 1;
}

int fr_feed_gen_parsed(struct gen_ev *ev)
{
    const struct fr_feed_links links = {gen_link, ev};
    return fr_feed_text_parse_comment(&ev->parsed, (const char *)ev->comment.data, ev->comment.len,
                                      fr_buf_cstr(&ev->title), ev->wb,
                                      ev->wb ? gen_wb[ev->s.ui].sep : NULL, &links);
}
