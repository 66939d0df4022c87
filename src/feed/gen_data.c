/*
 * gen_data.c — the synthetic generator's tables: languages (namespace names
 * and the MediaWiki messages that appear in recentchange events) and wikis
 * (host, script, family, patrolling, share of the stream, id ranges).
 *
 * Calibration (docs/FEED.md has the measured figures): the recorded sample
 * (gokulportfolio, 1,200 events) is a key-partitioned subset of the stream,
 * so its 23 wikis are dominated by commonswiki (49 %) and wikidatawiki (35 %)
 * and it has no enwiki at all. The weights below keep the sample's two
 * leaders and its per-type shape (categorize is mostly Commons; Wikidata
 * almost never categorizes) and add the long tail of the full stream
 * (~110 wikis, enwiki the third largest). Ids of the wikis in the samples
 * start from their observed values; the others are scaled by weight.
 *
 * Constant data: thread-safe.
 */
#include "feed/feed_int.h"

#include <string.h>

/* code, talk, user, user talk, file, template, category, help, project (Wikipedia),
 * category added/removed, page created, extra letters */
static const struct fr_feed_lang feed_langs[] = {
    {"en", "Talk", "User", "User talk", "File", "Template", "Category", "Help", "Wikipedia",
     "[[:%s]] added to category", "[[:%s]] removed from category", "Created page with \"%s\"",
     NULL},
    {"de", "Diskussion", "Benutzer", "Benutzer Diskussion", "Datei", "Vorlage", "Kategorie",
     "Hilfe", "Wikipedia", "[[:%s]] wurde zur Kategorie hinzugefügt",
     "[[:%s]] wurde aus der Kategorie entfernt", "Die Seite wurde neu angelegt: „%s“", "ä ö ü ß"},
    {"fr", "Discussion", "Utilisateur", "Discussion utilisateur", "Fichier", "Modèle", "Catégorie",
     "Aide", "Wikipédia", "[[:%s]] ajoutée à la catégorie", "[[:%s]] retirée de la catégorie",
     "Page créée avec « %s »", "é è ê à ç ô î œ"},
    {"es", "Discusión", "Usuario", "Usuario discusión", "Archivo", "Plantilla", "Categoría",
     "Ayuda", "Wikipedia", "[[:%s]] añadida a la categoría", "[[:%s]] eliminada de la categoría",
     "Página creada con «%s»", "á é í ó ú ñ"},
    {"it", "Discussione", "Utente", "Discussioni utente", "File", "Template", "Categoria", "Aiuto",
     "Wikipedia", "[[:%s]] aggiunta alla categoria", "[[:%s]] rimossa dalla categoria",
     "Creata pagina con \"%s\"", "à è ì ò ù"},
    {"pt", "Discussão", "Usuário(a)", "Usuário(a) Discussão", "Ficheiro", "Predefinição",
     "Categoria", "Ajuda", "Wikipédia", "[[:%s]] adicionada à categoria",
     "[[:%s]] removida da categoria", "Criou nova página com \"%s\"", "ã õ ç á ê é ó"},
    {"pl", "Dyskusja", "Wikipedysta", "Dyskusja wikipedysty", "Plik", "Szablon", "Kategoria",
     "Pomoc", "Wikipedia", NULL, NULL, "Utworzono nową stronę \"%s\"", "ą ę ó ł ż ś ć ń"},
    {"nl", "Overleg", "Gebruiker", "Overleg gebruiker", "Bestand", "Sjabloon", "Categorie", "Help",
     "Wikipedia", NULL, NULL, "Nieuwe pagina aangemaakt met '%s'", "ë ï"},
    {"sv", "Diskussion", "Användare", "Användardiskussion", "Fil", "Mall", "Kategori", "Hjälp",
     "Wikipedia", NULL, NULL, "Skapade sidan med '%s'", "å ä ö"},
    {"ru", "Обсуждение", "Участник", "Обсуждение участника", "Файл", "Шаблон", "Категория",
     "Справка", "Википедия", "[[:%s]] добавлена в категорию", "[[:%s]] исключена из категории",
     "Новая страница: «%s»", NULL},
    {"uk", "Обговорення", "Користувач", "Обговорення користувача", "Файл", "Шаблон", "Категорія",
     "Довідка", "Вікіпедія", NULL, NULL, "Створена сторінка: %s", "і ї є ґ"},
    {"sr", "Разговор", "Корисник", "Разговор са корисником", "Датотека", "Шаблон", "Категорија",
     "Помоћ", "Википедија", NULL, NULL, NULL, "ј љ њ ћ ђ"},
    {"ja", "ノート", "利用者", "利用者‐会話", "ファイル", "Template", "Category", "Help",
     "Wikipedia", "[[:%s]]をカテゴリに追加", "[[:%s]]をカテゴリから除去", "ページの作成:「%s」",
     NULL},
    {"zh", "Talk", "User", "User talk", "File", "Template", "Category", "Help", "Wikipedia",
     "[[:%s]]已添加至分类", "[[:%s]]已从分类中移除", "创建页面，内容为“%s”", NULL},
    {"ko", "토론", "사용자", "사용자토론", "파일", "틀", "분류", "도움말", "위키백과", NULL, NULL,
     "새 문서: %s", NULL},
    {"ar", "نقاش", "مستخدم", "نقاش المستخدم", "ملف", "قالب", "تصنيف", "مساعدة", "ويكيبيديا",
     "[[:%s]] أضيفت للتصنيف", "[[:%s]] أزيلت من التصنيف", "أنشأ الصفحة ب'%s'", NULL},
    {"fa", "بحث", "کاربر", "بحث کاربر", "پرونده", "الگو", "رده", "راهنما", "ویکی‌پدیا",
     NULL, NULL, "صفحه‌ای تازه حاوی «%s» ایجاد کرد", "پ چ ژ گ ک ی"},
    {"he", "שיחה", "משתמש", "שיחת משתמש", "קובץ", "תבנית", "קטגוריה", "עזרה", "ויקיפדיה",
     "[[:%s]] נוסף לקטגוריה", "[[:%s]] הוסר מהקטגוריה", "דף חדש: %s", NULL},
    {"hi", "वार्ता", "सदस्य", "सदस्य वार्ता", "चित्र", "साँचा", "श्रेणी", "सहायता", "विकिपीडिया",
     "[[:%s]] को श्रेणी में जोड़ा", "[[:%s]] को श्रेणी से हटाया", "नया पृष्ठ: %s", NULL},
    {"bn", "আলাপ", "ব্যবহারকারী", "ব্যবহারকারী আলাপ", "চিত্র", "টেমপ্লেট", "বিষয়শ্রেণী", "সাহায্য",
     "উইকিপিডিয়া", NULL, NULL, NULL, NULL},
    {"ta", "பேச்சு", "பயனர்", "பயனர் பேச்சு", "படிமம்", "வார்ப்புரு", "பகுப்பு", "உதவி", "விக்கிப்பீடியா",
     NULL, NULL, NULL, NULL},
    {"ml", "സംവാദം", "ഉപയോക്താവ്", "ഉപയോക്താവിന്റെ സംവാദം", "പ്രമാണം", "ഫലകം", "വർഗ്ഗം", "സഹായം",
     "വിക്കിപീഡിയ", NULL, NULL, NULL, NULL},
    {"th", "พูดคุย", "ผู้ใช้", "คุยกับผู้ใช้", "ไฟล์", "แม่แบบ", "หมวดหมู่", "วิธีใช้", "วิกิพีเดีย", NULL, NULL, NULL,
     NULL},
    {"el", "Συζήτηση", "Χρήστης", "Συζήτηση χρήστη", "Αρχείο", "Πρότυπο", "Κατηγορία", "Βοήθεια",
     "Βικιπαίδεια", NULL, NULL, NULL, NULL},
    {"tr", "Tartışma", "Kullanıcı", "Kullanıcı mesaj", "Dosya", "Şablon", "Kategori", "Yardım",
     "Vikipedi", NULL, NULL, "\"%s\" içeriğiyle yeni sayfa oluşturdu", "ı ş ğ ç ö ü"},
    {"vi", "Thảo luận", "Thành viên", "Thảo luận Thành viên", "Tập tin", "Bản mẫu", "Thể loại",
     "Trợ giúp", "Wikipedia", NULL, NULL, "Tạo trang mới với nội dung “%s”",
     "ă â ơ ư ệ ạ ồ ế ủ đ ộ ả"},
    {"cs", "Diskuse", "Wikipedista", "Diskuse s wikipedistou", "Soubor", "Šablona", "Kategorie",
     "Nápověda", "Wikipedie", NULL, NULL, NULL, "á é í ř š č ž ů ý"},
    {"id", "Pembicaraan", "Pengguna", "Pembicaraan Pengguna", "Berkas", "Templat", "Kategori",
     "Bantuan", "Wikipedia", NULL, NULL, NULL, NULL},
    {"hu", "Vita", "Szerkesztő", "Szerkesztővita", "Fájl", "Sablon", "Kategória", "Segítség",
     "Wikipédia", NULL, NULL, NULL, "á é ő ű ö ü"},
    {"fi", "Keskustelu", "Käyttäjä", "Keskustelu käyttäjästä", "Tiedosto", "Malline", "Luokka",
     "Ohje", "Wikipedia", NULL, NULL, NULL, "ä ö"},
    {"ca", "Discussió", "Usuari", "Usuari Discussió", "Fitxer", "Plantilla", "Categoria", "Ajuda",
     "Viquipèdia", NULL, NULL, NULL, "à ç è ò l·l"},
    {"cy", "Sgwrs", "Defnyddiwr", "Sgwrs Defnyddiwr", "Delwedd", "Nodyn", "Categori", "Cymorth",
     "Wicipedia", NULL, NULL, NULL, "â ŵ ŷ"},
    {"ka", "განხილვა", "მომხმარებელი", "მომხმარებლის განხილვა", "ფაილი", "თარგი", "კატეგორია",
     "დახმარება", "ვიკიპედია", NULL, NULL, NULL, NULL},
    {"hy", "Քննարկում", "Մասնակից", "Մասնակցի քննարկում", "Պատկեր", "Կաղապար", "Կատեգորիա",
     "Օգնություն", "Վիքիպեդիա", NULL, NULL, NULL, NULL},
    {"nb", "Diskusjon", "Bruker", "Brukerdiskusjon", "Fil", "Mal", "Kategori", "Hjelp", "Wikipedia",
     NULL, NULL, NULL, "å æ ø"},
    {"da", "Diskussion", "Bruger", "Brugerdiskussion", "Fil", "Skabelon", "Kategori", "Hjælp",
     "Wikipedia", NULL, NULL, NULL, "å æ ø"},
    {"az", "Müzakirə", "İstifadəçi", "İstifadəçi müzakirəsi", "Fayl", "Şablon", "Kateqoriya",
     "Kömək", "Vikipediya", NULL, NULL, NULL, "ə ş ç ğ ı ö ü"},
    {"eo", "Diskuto", "Uzanto", "Uzanto-Diskuto", "Dosiero", "Ŝablono", "Kategorio", "Helpo",
     "Vikipedio", NULL, NULL, NULL, "ĉ ĝ ŝ ŭ ĵ"},
    {"lv", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "ā ē ī ū š ž ķ ļ"},
    {"lt", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "ą ė į ų š ž č"},
    {"is", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "þ ð æ ö á"},
    {"ro", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "ă â î ș ț"},
    {"sk", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "á ä č ď ľ ň ô š ť ž"},
    {"hr", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "č ć đ š ž"},
    {"et", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "ä ö õ ü"},
    {"uz", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "oʻ gʻ sh ch"},
    {"kk", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "ә ө ү ұ қ ғ ң"},
};

const struct fr_feed_lang *fr_feed_lang_get(const char *code)
{
    for (size_t i = 0; i < sizeof feed_langs / sizeof feed_langs[0]; i++) {
        if (strcmp(feed_langs[i].code, code) == 0) {
            return &feed_langs[i];
        }
    }
    return &feed_langs[0];
}

void fr_feed_lang_resolve(const char *code, struct fr_feed_lang *out)
{
    const struct fr_feed_lang *l = fr_feed_lang_get(code), *en = &feed_langs[0];
    *out = *l;
#define LANG_FALLBACK(f) out->f = out->f ? out->f : en->f
    LANG_FALLBACK(talk);
    LANG_FALLBACK(user);
    LANG_FALLBACK(user_talk);
    LANG_FALLBACK(file);
    LANG_FALLBACK(tmpl);
    LANG_FALLBACK(category);
    LANG_FALLBACK(help);
    LANG_FALLBACK(project);
    LANG_FALLBACK(cat_added);
    LANG_FALLBACK(cat_removed);
    LANG_FALLBACK(created);
#undef LANG_FALLBACK
}

#define L FR_FEED_LATIN
#define CY FR_FEED_CYRILLIC
#define RC 1 /* RC patrol */
#define NP 2 /* new-page patrol */
#define BOTH (RC | NP)

/* db, host, code, ns_lang, script, family, patrol, rtl, w_edit, w_cat, rc_base, rev_base
 * Weights are per 100,000 events of the kind; rc/rev bases of 0 are derived. */
const struct fr_feed_wiki fr_feed_wikis[] = {
    {"wikidatawiki", "www.wikidata.org", "en", "en", L, FR_FEED_WIKIDATA, BOTH, 0, 42000, 60,
     2594614873, 2515924338},
    {"commonswiki", "commons.wikimedia.org", "en", "en", L, FR_FEED_COMMONS, BOTH, 0, 24000, 62000,
     3390891945, 1246090335},
    {"enwiki", "en.wikipedia.org", "en", "en", L, FR_FEED_WP, NP, 0, 6500, 8000, 1987650000,
     1331000000},
    {"frwiki", "fr.wikipedia.org", "fr", "fr", L, FR_FEED_WP, BOTH, 0, 3000, 4500, 578188660,
     237711621},
    {"dewiki", "de.wikipedia.org", "de", "de", L, FR_FEED_WP, NP, 0, 2200, 1500, 412000000,
     257000000},
    {"eswiki", "es.wikipedia.org", "es", "es", L, FR_FEED_WP, BOTH, 0, 1400, 1200, 0, 0},
    {"ruwiki", "ru.wikipedia.org", "ru", "ru", CY, FR_FEED_WP, NP, 0, 1300, 1000, 541000000,
     147500000},
    {"itwiki", "it.wikipedia.org", "it", "it", L, FR_FEED_WP, BOTH, 0, 1000, 700, 0, 0},
    {"jawiki", "ja.wikipedia.org", "ja", "ja", FR_FEED_KANA, FR_FEED_WP, BOTH, 0, 1000, 600, 0, 0},
    {"zhwiki", "zh.wikipedia.org", "zh", "zh", FR_FEED_HAN, FR_FEED_WP, BOTH, 0, 900, 500,
     200174678, 93402285},
    {"ptwiki", "pt.wikipedia.org", "pt", "pt", L, FR_FEED_WP, BOTH, 0, 900, 700, 0, 0},
    {"ukwiki", "uk.wikipedia.org", "uk", "uk", CY, FR_FEED_WP, BOTH, 0, 700, 500, 0, 0},
    {"plwiki", "pl.wikipedia.org", "pl", "pl", L, FR_FEED_WP, NP, 0, 600, 400, 0, 0},
    {"arwiki", "ar.wikipedia.org", "ar", "ar", FR_FEED_ARABIC, FR_FEED_WP, BOTH, 1, 550, 500, 0, 0},
    {"fawiki", "fa.wikipedia.org", "fa", "fa", FR_FEED_ARABIC, FR_FEED_WP, BOTH, 1, 500, 400, 0, 0},
    {"hewiki", "he.wikipedia.org", "he", "he", FR_FEED_HEBREW, FR_FEED_WP, BOTH, 1, 500, 300, 0, 0},
    {"nlwiki", "nl.wikipedia.org", "nl", "nl", L, FR_FEED_WP, BOTH, 0, 450, 250, 0, 0},
    {"kowiki", "ko.wikipedia.org", "ko", "ko", FR_FEED_HANGUL, FR_FEED_WP, BOTH, 0, 350, 250, 0, 0},
    {"svwiki", "sv.wikipedia.org", "sv", "sv", L, FR_FEED_WP, BOTH, 0, 300, 200, 0, 0},
    {"viwiki", "vi.wikipedia.org", "vi", "vi", L, FR_FEED_WP, BOTH, 0, 300, 200, 0, 0},
    {"idwiki", "id.wikipedia.org", "id", "id", L, FR_FEED_WP, BOTH, 0, 300, 200, 0, 0},
    {"trwiki", "tr.wikipedia.org", "tr", "tr", L, FR_FEED_WP, BOTH, 0, 300, 200, 0, 0},
    {"cswiki", "cs.wikipedia.org", "cs", "cs", L, FR_FEED_WP, BOTH, 0, 300, 200, 0, 0},
    {"huwiki", "hu.wikipedia.org", "hu", "hu", L, FR_FEED_WP, NP, 0, 250, 150, 0, 0},
    {"cawiki", "ca.wikipedia.org", "ca", "ca", L, FR_FEED_WP, BOTH, 0, 250, 150, 0, 0},
    {"fiwiki", "fi.wikipedia.org", "fi", "fi", L, FR_FEED_WP, NP, 0, 200, 120, 0, 0},
    {"srwiki", "sr.wikipedia.org", "sr", "sr", CY, FR_FEED_WP, BOTH, 0, 200, 120, 0, 0},
    {"elwiki", "el.wikipedia.org", "el", "el", FR_FEED_GREEK, FR_FEED_WP, BOTH, 0, 150, 100, 0, 0},
    {"hiwiki", "hi.wikipedia.org", "hi", "hi", FR_FEED_DEVANAGARI, FR_FEED_WP, BOTH, 0, 150, 80, 0,
     0},
    {"bnwiki", "bn.wikipedia.org", "bn", "bn", FR_FEED_BENGALI, FR_FEED_WP, BOTH, 0, 150, 100, 0,
     0},
    {"tawiki", "ta.wikipedia.org", "ta", "ta", FR_FEED_TAMIL, FR_FEED_WP, BOTH, 0, 120, 60, 0, 0},
    {"mlwiki", "ml.wikipedia.org", "ml", "ml", FR_FEED_MALAYALAM, FR_FEED_WP, BOTH, 0, 100, 60, 0,
     0},
    {"thwiki", "th.wikipedia.org", "th", "th", FR_FEED_THAI, FR_FEED_WP, BOTH, 0, 120, 60, 0, 0},
    {"kawiki", "ka.wikipedia.org", "ka", "ka", FR_FEED_GEORGIAN, FR_FEED_WP, BOTH, 0, 80, 40, 0, 0},
    {"hywiki", "hy.wikipedia.org", "hy", "hy", FR_FEED_ARMENIAN, FR_FEED_WP, BOTH, 0, 100, 50, 0,
     0},
    {"cywiki", "cy.wikipedia.org", "cy", "cy", L, FR_FEED_WP, 0, 0, 100, 40, 0, 0},
    {"euwiki", "eu.wikipedia.org", "eu", "en", L, FR_FEED_WP, BOTH, 0, 100, 40, 0, 0},
    {"nowiki", "no.wikipedia.org", "nb", "nb", L, FR_FEED_WP, BOTH, 0, 120, 60, 0, 0},
    {"dawiki", "da.wikipedia.org", "da", "da", L, FR_FEED_WP, BOTH, 0, 100, 50, 0, 0},
    {"azwiki", "az.wikipedia.org", "az", "az", L, FR_FEED_WP, BOTH, 0, 80, 40, 0, 0},
    {"simplewiki", "simple.wikipedia.org", "en", "en", L, FR_FEED_WP, BOTH, 0, 150, 100, 0, 0},
    {"cebwiki", "ceb.wikipedia.org", "ceb", "en", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"slwiki", "sl.wikipedia.org", "sl", "en", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"skwiki", "sk.wikipedia.org", "sk", "sk", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"hrwiki", "hr.wikipedia.org", "hr", "hr", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"rowiki", "ro.wikipedia.org", "ro", "ro", L, FR_FEED_WP, BOTH, 0, 120, 60, 0, 0},
    {"bgwiki", "bg.wikipedia.org", "bg", "ru", CY, FR_FEED_WP, BOTH, 0, 80, 40, 0, 0},
    {"bewiki", "be.wikipedia.org", "be", "ru", CY, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"kkwiki", "kk.wikipedia.org", "kk", "kk", CY, FR_FEED_WP, BOTH, 0, 40, 20, 0, 0},
    {"mkwiki", "mk.wikipedia.org", "mk", "sr", CY, FR_FEED_WP, BOTH, 0, 40, 20, 0, 0},
    {"uzwiki", "uz.wikipedia.org", "uz", "uz", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"etwiki", "et.wikipedia.org", "et", "et", L, FR_FEED_WP, BOTH, 0, 50, 20, 0, 0},
    {"lvwiki", "lv.wikipedia.org", "lv", "lv", L, FR_FEED_WP, BOTH, 0, 40, 20, 0, 0},
    {"ltwiki", "lt.wikipedia.org", "lt", "lt", L, FR_FEED_WP, BOTH, 0, 50, 20, 0, 0},
    {"glwiki", "gl.wikipedia.org", "gl", "es", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"eowiki", "eo.wikipedia.org", "eo", "eo", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"mswiki", "ms.wikipedia.org", "ms", "id", L, FR_FEED_WP, BOTH, 0, 60, 30, 0, 0},
    {"tlwiki", "tl.wikipedia.org", "tl", "en", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"swwiki", "sw.wikipedia.org", "sw", "en", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"afwiki", "af.wikipedia.org", "af", "nl", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"iswiki", "is.wikipedia.org", "is", "is", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"lawiki", "la.wikipedia.org", "la", "en", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"barwiki", "bar.wikipedia.org", "bar", "de", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"lgwiki", "lg.wikipedia.org", "lg", "en", L, FR_FEED_WP, BOTH, 0, 30, 5, 0, 0},
    {"vowiki", "vo.wikipedia.org", "vo", "en", L, FR_FEED_WP, BOTH, 0, 20, 5, 0, 0},
    {"ocwiki", "oc.wikipedia.org", "oc", "fr", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"brwiki", "br.wikipedia.org", "br", "fr", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"fywiki", "fy.wikipedia.org", "fy", "nl", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"gawiki", "ga.wikipedia.org", "ga", "en", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"astwiki", "ast.wikipedia.org", "ast", "es", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"shwiki", "sh.wikipedia.org", "sh", "hr", L, FR_FEED_WP, BOTH, 0, 40, 20, 0, 0},
    {"bswiki", "bs.wikipedia.org", "bs", "hr", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"sqwiki", "sq.wikipedia.org", "sq", "en", L, FR_FEED_WP, BOTH, 0, 30, 10, 0, 0},
    {"arzwiki", "arz.wikipedia.org", "arz", "ar", FR_FEED_ARABIC, FR_FEED_WP, BOTH, 1, 80, 60, 0,
     0},
    {"ckbwiki", "ckb.wikipedia.org", "ckb", "fa", FR_FEED_ARABIC, FR_FEED_WP, BOTH, 1, 40, 20, 0,
     0},
    {"urwiki", "ur.wikipedia.org", "ur", "fa", FR_FEED_ARABIC, FR_FEED_WP, BOTH, 1, 60, 40, 0, 0},
    {"pnbwiki", "pnb.wikipedia.org", "pnb", "fa", FR_FEED_ARABIC, FR_FEED_WP, BOTH, 1, 20, 10, 0,
     0},
    {"yiwiki", "yi.wikipedia.org", "yi", "he", FR_FEED_HEBREW, FR_FEED_WP, BOTH, 1, 10, 5, 0, 0},
    {"mrwiki", "mr.wikipedia.org", "mr", "hi", FR_FEED_DEVANAGARI, FR_FEED_WP, BOTH, 0, 40, 20, 0,
     0},
    {"newiki", "ne.wikipedia.org", "ne", "hi", FR_FEED_DEVANAGARI, FR_FEED_WP, BOTH, 0, 30, 10, 0,
     0},
    {"tewiki", "te.wikipedia.org", "te", "ta", FR_FEED_TAMIL, FR_FEED_WP, BOTH, 0, 50, 20, 0, 0},
    {"zh_yuewiki", "zh-yue.wikipedia.org", "yue", "zh", FR_FEED_HAN, FR_FEED_WP, BOTH, 0, 40, 20, 0,
     0},
    {"wuuwiki", "wuu.wikipedia.org", "wuu", "zh", FR_FEED_HAN, FR_FEED_WP, BOTH, 0, 10, 5, 0, 0},
    {"enwiktionary", "en.wiktionary.org", "en", "en", L, FR_FEED_WIKT, BOTH, 0, 900, 800, 0, 0},
    {"frwiktionary", "fr.wiktionary.org", "fr", "fr", L, FR_FEED_WIKT, BOTH, 0, 500, 600, 63883026,
     39664208},
    {"mgwiktionary", "mg.wiktionary.org", "mg", "en", L, FR_FEED_WIKT, BOTH, 0, 150, 20, 0, 0},
    {"dewiktionary", "de.wiktionary.org", "de", "de", L, FR_FEED_WIKT, BOTH, 0, 150, 100, 0, 0},
    {"ruwiktionary", "ru.wiktionary.org", "ru", "ru", CY, FR_FEED_WIKT, BOTH, 0, 100, 100, 0, 0},
    {"jawiktionary", "ja.wiktionary.org", "ja", "ja", FR_FEED_KANA, FR_FEED_WIKT, BOTH, 0, 40, 20,
     0, 0},
    {"zhwiktionary", "zh.wiktionary.org", "zh", "zh", FR_FEED_HAN, FR_FEED_WIKT, BOTH, 0, 30, 20, 0,
     0},
    {"enwikisource", "en.wikisource.org", "en", "en", L, FR_FEED_WS, BOTH, 0, 150, 60, 0, 0},
    {"frwikisource", "fr.wikisource.org", "fr", "fr", L, FR_FEED_WS, BOTH, 0, 100, 40, 0, 0},
    {"dewikisource", "de.wikisource.org", "de", "de", L, FR_FEED_WS, BOTH, 0, 50, 20, 0, 0},
    {"hiwikisource", "hi.wikisource.org", "hi", "hi", FR_FEED_DEVANAGARI, FR_FEED_WS, BOTH, 0, 80,
     700, 1117209, 666933},
    {"plwikisource", "pl.wikisource.org", "pl", "pl", L, FR_FEED_WS, BOTH, 0, 60, 60, 7433539,
     4137550},
    {"enwikibooks", "en.wikibooks.org", "en", "en", L, FR_FEED_WB, BOTH, 0, 60, 20, 0, 0},
    {"dewikibooks", "de.wikibooks.org", "de", "de", L, FR_FEED_WB, BOTH, 0, 40, 10, 0, 0},
    {"enwikiquote", "en.wikiquote.org", "en", "en", L, FR_FEED_WQ, BOTH, 0, 50, 20, 0, 0},
    {"enwikivoyage", "en.wikivoyage.org", "en", "en", L, FR_FEED_WV, BOTH, 0, 40, 20, 0, 0},
    {"enwikinews", "en.wikinews.org", "en", "en", L, FR_FEED_WN, BOTH, 0, 20, 10, 0, 0},
    {"specieswiki", "species.wikimedia.org", "en", "en", L, FR_FEED_META, BOTH, 0, 150, 150, 0, 0},
    {"metawiki", "meta.wikimedia.org", "en", "en", L, FR_FEED_META, BOTH, 0, 250, 100, 0, 0},
    {"mediawikiwiki", "www.mediawiki.org", "en", "en", L, FR_FEED_META, BOTH, 0, 150, 60, 0, 0},
    {"incubatorwiki", "incubator.wikimedia.org", "en", "en", L, FR_FEED_META, BOTH, 0, 60, 30, 0,
     0},
    {"testwiki", "test.wikipedia.org", "en", "en", L, FR_FEED_WP, BOTH, 0, 80, 120, 0, 0},
    {"test2wiki", "test2.wikipedia.org", "en", "en", L, FR_FEED_WP, BOTH, 0, 20, 10, 0, 0},
    {"outreachwiki", "outreach.wikimedia.org", "en", "en", L, FR_FEED_META, BOTH, 0, 10, 5, 0, 0},
    {"foundationwiki", "foundation.wikimedia.org", "en", "en", L, FR_FEED_META, BOTH, 0, 10, 5, 0,
     0},
};

const size_t fr_feed_nwikis = sizeof fr_feed_wikis / sizeof fr_feed_wikis[0];

size_t fr_feed_wiki_pick(struct fr_feed_rng *rng, int categorize)
{
    uint64_t t = 0;
    for (size_t i = 0; i < fr_feed_nwikis; i++) {
        t += categorize ? fr_feed_wikis[i].w_cat : fr_feed_wikis[i].w_edit;
    }
    uint64_t r = fr_feed_rng_below(rng, t);
    for (size_t i = 0; i < fr_feed_nwikis; i++) {
        uint64_t w = categorize ? fr_feed_wikis[i].w_cat : fr_feed_wikis[i].w_edit;
        if (r < w) {
            return i;
        }
        r -= w;
    }
    return 0;
}
