/*
 * test_objstore.c — unit tests of src/objstore without a network: SigV4
 * against AWS's published vectors, URI encoding, the XML reader and the
 * S3 answer parsers (pagination, malformed documents), s3:// URIs and the
 * path-to-key mapping of the Iceberg adapter.
 *
 * Where the expected values come from (none is computed by our code):
 *   - "Signature Version 4 test suite", aws-sig-v4-test-suite (2015-08-30),
 *     https://docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html
 *     credential AKIDEXAMPLE / wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY,
 *     us-east-1, service "service", 20150830T123600Z. Each case names its
 *     folder; the signature (and where noted the string-to-sign hash) is
 *     copied from the case's .authz / .sts file.
 *   - The S3 examples in "Signature Calculations for the Authorization
 *     Header: Transferring Payload in a Single Chunk",
 *     https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 *     credential AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,
 *     bucket examplebucket, 20130524T000000Z: GET Object (Range), PUT
 *     Object, GET Bucket Lifecycle and GET Bucket (List Objects).
 */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "core/err.h"
#include "objstore/objstore_int.h"
#include "objstore/s3.h"
#include "objstore/s3_io.h"
#include "objstore/sigv4.h"

/* ---------------------------------------------------------------- sigv4 -- */

#define SUITE_KEY "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_DATE "20150830T123600Z"
#define SUITE_HOST "example.amazonaws.com"
#define EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct suite_case {
    const char *name; /* the test-suite folder */
    const char *method;
    const char *uri;
    struct fr_sigv4_param params[4];
    uint32_t nparams;
    struct fr_sigv4_header extra[4]; /* besides Host and X-Amz-Date */
    uint32_t nextra;
    const char *body;
    const char *signature;
    const char *sts_hash; /* last line of the .sts file, or NULL */
    const char *creq;     /* whole .creq file, or NULL */
};

#define SUITE_TOKEN                                                                              \
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpS" \
    "PfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQD" \
    "YwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+s" \
    "cqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="

static const struct suite_case suite[] = {
    {"get-vanilla", "GET", "/", {{0}}, 0, {{0}}, 0, "",
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
     "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
     "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_HASH},
    {"get-vanilla-query-order-key-case", "GET", "/",
     {{"Param2", "value2"}, {"Param1", "value1"}}, 2, {{0}}, 0, "",
     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
     "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0", NULL},
    {"get-vanilla-query-order-key", "GET", "/", {{"Param1", "value2"}, {"Param1", "Value1"}}, 2,
     {{0}}, 0, "", "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1",
     "704b4cef673542d84cdff252633f065e8daeba5f168b77116f8b1bcaf3d38f89", NULL},
    {"get-vanilla-query-order-value", "GET", "/", {{"Param1", "value2"}, {"Param1", "value1"}}, 2,
     {{0}}, 0, "", "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694",
     "c968629d70850097a2d8781c9bf7edcb988b04cac14cca9be4acc3595f884606", NULL},
    {"get-vanilla-query-unreserved", "GET", "/",
     {{"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
       "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}},
     1, {{0}}, 0, "", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
     "c30d4703d9f799439be92736156d47ccfb2d879ddf56f5befa6d1d6aab979177", NULL},
    {"get-unreserved", "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
     {{0}}, 0, {{0}}, 0, "", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
     "6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9", NULL},
    {"get-header-value-order", "GET", "/", {{0}}, 0,
     {{"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"},
      {"My-Header1", "value2"}},
     4, "", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
     "31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86",
     "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value4,value1,value3,value2\n"
     "x-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\n" EMPTY_HASH},
    {"get-header-key-duplicate", "GET", "/", {{0}}, 0,
     {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}}, 3, "",
     "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
     "dc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c", NULL},
    {"get-header-value-trim", "GET", "/", {{0}}, 0,
     {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}}, 2, "",
     "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
     "a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7",
     "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n"
     "x-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\n" EMPTY_HASH},
    {"post-vanilla", "POST", "/", {{0}}, 0, {{0}}, 0, "",
     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
     "553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87", NULL},
    {"post-vanilla-query", "POST", "/", {{"Param1", "value1"}}, 1, {{0}}, 0, "",
     "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
     "9d659678c1756bb3113e2ce898845a0a79dbbc57b740555917687f1b3340fbbd", NULL},
    {"post-header-value-case", "POST", "/", {{0}}, 0, {{"My-Header1", "VALUE1"}}, 1, "",
     "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
     "d51ced243e649e3de6ef63afbbdcbca03131a21a7103a1583706a64618606a93", NULL},
    {"post-x-www-form-urlencoded", "POST", "/", {{0}}, 0,
     {{"Content-Type", "application/x-www-form-urlencoded"}}, 1, "Param1=value1",
     "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
     "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281",
     "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
     "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
     "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"},
    {"post-sts-token/post-sts-header-before", "POST", "/", {{0}}, 0,
     {{"X-Amz-Security-Token", SUITE_TOKEN}}, 1, "",
     "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
     "c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6", NULL},
};

static void test_sigv4_suite(void)
{
    for (size_t i = 0; i < sizeof suite / sizeof suite[0]; i++) {
        const struct suite_case *sc = &suite[i];
        struct fr_sigv4_header h[8];
        uint32_t nh = 0;
        h[nh++] = (struct fr_sigv4_header){"Host", SUITE_HOST};
        for (uint32_t k = 0; k < sc->nextra; k++) {
            h[nh++] = sc->extra[k];
        }
        h[nh++] = (struct fr_sigv4_header){"X-Amz-Date", SUITE_DATE};
        char hash[65];
        fr_sigv4_sha256_hex(sc->body, strlen(sc->body), hash);
        struct fr_buf uri;
        fr_buf_init(&uri, 1024);
        CHECK_EQ_INT(fr_sigv4_encode(&uri, sc->uri, strlen(sc->uri), 1), FR_OK);
        struct fr_sigv4_req req = {sc->method, fr_buf_cstr(&uri), sc->params, sc->nparams, h, nh,
                                   hash, SUITE_DATE, "us-east-1", "service", SUITE_KEY,
                                   SUITE_SECRET};
        struct fr_sigv4_out out;
        struct fr_buf creq, sts;
        fr_buf_init(&creq, 1 << 16);
        fr_buf_init(&sts, 4096);
        CHECK_EQ_INT(fr_sigv4_sign(&req, &out, &creq, &sts), FR_OK);
        if (strcmp(out.signature, sc->signature) != 0) {
            fprintf(stderr, "case %s:\n%s\n--\n%s\n", sc->name, fr_buf_cstr(&creq),
                    fr_buf_cstr(&sts));
        }
        CHECK_EQ_STR(out.signature, sc->signature);
        if (sc->sts_hash) {
            const char *nl = strrchr(fr_buf_cstr(&sts), '\n');
            CHECK(nl && strcmp(nl + 1, sc->sts_hash) == 0);
        }
        if (sc->creq) {
            CHECK_EQ_STR(fr_buf_cstr(&creq), sc->creq);
        }
        /* the Authorization header of the .authz file, shape and values */
        char want[1024];
        snprintf(want, sizeof want,
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                 "SignedHeaders=%s, Signature=%s",
                 out.signed_headers, sc->signature);
        CHECK_EQ_STR(out.authorization, want);
        /* invariant: no secret in anything the signer hands out */
        CHECK(!strstr(fr_buf_cstr(&creq), SUITE_SECRET));
        CHECK(!strstr(fr_buf_cstr(&sts), SUITE_SECRET));
        CHECK(!strstr(out.authorization, SUITE_SECRET));
        fr_buf_free(&uri);
        fr_buf_free(&creq);
        fr_buf_free(&sts);
    }
}

#define S3_KEY "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_DATE "20130524T000000Z"
#define S3_HOST "examplebucket.s3.amazonaws.com"

static void s3_sign(const char *method, const char *raw_path, const struct fr_sigv4_param *params,
                    uint32_t np, const struct fr_sigv4_header *extra, uint32_t ne,
                    const char *body, struct fr_sigv4_out *out, struct fr_buf *sts)
{
    char hash[65];
    fr_sigv4_sha256_hex(body, strlen(body), hash);
    struct fr_sigv4_header h[8];
    uint32_t nh = 0;
    h[nh++] = (struct fr_sigv4_header){"Host", S3_HOST};
    for (uint32_t i = 0; i < ne; i++) {
        h[nh++] = extra[i];
    }
    h[nh++] = (struct fr_sigv4_header){"x-amz-content-sha256", hash};
    h[nh++] = (struct fr_sigv4_header){"x-amz-date", S3_DATE};
    struct fr_buf uri;
    fr_buf_init(&uri, 1024);
    CHECK_EQ_INT(fr_sigv4_encode(&uri, raw_path, strlen(raw_path), 1), FR_OK);
    struct fr_sigv4_req req = {method, fr_buf_cstr(&uri), params, np, h, nh, hash, S3_DATE,
                               "us-east-1", "s3", S3_KEY, S3_SECRET};
    CHECK_EQ_INT(fr_sigv4_sign(&req, out, NULL, sts), FR_OK);
    fr_buf_free(&uri);
}

static void test_sigv4_s3_examples(void)
{
    struct fr_sigv4_out out;
    struct fr_buf sts;
    fr_buf_init(&sts, 4096);
    /* GET Object, first 10 bytes */
    struct fr_sigv4_header range = {"Range", "bytes=0-9"};
    s3_sign("GET", "/test.txt", NULL, 0, &range, 1, "", &out, &sts);
    CHECK_EQ_STR(out.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    CHECK_EQ_STR(out.signed_headers, "host;range;x-amz-content-sha256;x-amz-date");
    CHECK_EQ_STR(fr_buf_cstr(&sts), "AWS4-HMAC-SHA256\n20130524T000000Z\n"
                                    "20130524/us-east-1/s3/aws4_request\n"
                                    "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    /* PUT Object: '$' in the key is encoded in the canonical URI */
    struct fr_sigv4_header put[2] = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                                     {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
    char hash[65];
    fr_sigv4_sha256_hex("Welcome to Amazon S3.", 21, hash);
    CHECK_EQ_STR(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    s3_sign("PUT", "/test$file.text", NULL, 0, put, 2, "Welcome to Amazon S3.", &out, NULL);
    CHECK_EQ_STR(out.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    CHECK_EQ_STR(out.signed_headers, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
    /* GET Bucket Lifecycle: a bare query name signs as "lifecycle=" */
    struct fr_sigv4_param lc = {"lifecycle", ""};
    s3_sign("GET", "/", &lc, 1, NULL, 0, "", &out, NULL);
    CHECK_EQ_STR(out.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    /* GET Bucket (List Objects): parameters given out of order */
    struct fr_sigv4_param list[2] = {{"prefix", "J"}, {"max-keys", "2"}};
    s3_sign("GET", "/", list, 2, NULL, 0, "", &out, NULL);
    CHECK_EQ_STR(out.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    CHECK_EQ_STR(out.authorization,
                 "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                 "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                 "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    /* a wrong secret gives another signature (the check can fail) */
    struct fr_sigv4_header h[3] = {{"host", S3_HOST}, {"x-amz-content-sha256", EMPTY_HASH},
                                   {"x-amz-date", S3_DATE}};
    struct fr_sigv4_req req = {"GET", "/", list, 2, h, 3, EMPTY_HASH, S3_DATE, "us-east-1", "s3",
                               S3_KEY, "not-the-secret"};
    CHECK_EQ_INT(fr_sigv4_sign(&req, &out, NULL, NULL), FR_OK);
    CHECK(strcmp(out.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") != 0);
    /* malformed requests */
    req.amz_date = "20130524";
    CHECK_EQ_INT(fr_sigv4_sign(&req, &out, NULL, NULL), FR_EINVAL);
    fr_buf_free(&sts);
}

static void test_encode(void)
{
    struct fr_buf b;
    fr_buf_init(&b, 256);
    const char *s = "a b/c~d*é+=&%";
    CHECK_EQ_INT(fr_sigv4_encode(&b, s, strlen(s), 1), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "a%20b/c~d%2A%C3%A9%2B%3D%26%25");
    fr_buf_reset(&b);
    CHECK_EQ_INT(fr_sigv4_encode(&b, s, strlen(s), 0), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "a%20b%2Fc~d%2A%C3%A9%2B%3D%26%25");
    fr_buf_reset(&b);
    /* the suite's get-utf8 case: U+1234 in the path */
    CHECK_EQ_INT(fr_sigv4_encode(&b, "/\xE1\x88\xB4", 4, 1), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "/%E1%88%B4");
    fr_buf_free(&b);
    /* a capped buffer refuses rather than grows */
    struct fr_buf small;
    fr_buf_init(&small, 4);
    CHECK_EQ_INT(fr_sigv4_encode(&small, "a b c", 5, 0), FR_ETOOBIG);
    fr_buf_free(&small);
    char d[17];
    fr_sigv4_amz_date(1440938160000LL, d);
    CHECK_EQ_STR(d, "20150830T123600Z");
    fr_sigv4_amz_date(951782400000LL, d);
    CHECK_EQ_STR(d, "20000229T000000Z");
}

/* ------------------------------------------------------------------ xml -- */

struct collect {
    char keys[8][2100];
    int64_t sizes[8];
    int64_t mtimes[8];
    int n;
};

static int collect_fn(void *arg, const struct fr_s3_object *o)
{
    struct collect *c = arg;
    if (c->n >= 8) {
        return FR_ETOOBIG;
    }
    snprintf(c->keys[c->n], sizeof c->keys[0], "%s", o->key);
    c->sizes[c->n] = o->size;
    c->mtimes[c->n] = o->mtime_ms;
    c->n++;
    return FR_OK;
}

/* Shape of a ListObjectsV2 answer as in the S3 API reference example. */
static const char page1[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Name>bucket</Name>\n  <Prefix>wiki/</Prefix>\n  <KeyCount>2</KeyCount>\n"
    "  <MaxKeys>2</MaxKeys>\n  <IsTruncated>true</IsTruncated>\n"
    "  <Contents>\n    <Key>wiki/a&amp;b.parquet</Key>\n"
    "    <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>\n"
    "    <Size>434234</Size>\n    <StorageClass>STANDARD</StorageClass>\n  </Contents>\n"
    "  <Contents><Key>wiki/&#x1234;&#65;</Key><Size>0</Size></Contents>\n"
    "  <!-- a comment -->\n"
    "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
    "</ListBucketResult>\n";

static const char page2[] =
    "<ListBucketResult><IsTruncated>false</IsTruncated>"
    "<Contents><Key>wiki/z</Key><Size>7</Size><Owner><ID>x</ID></Owner></Contents>"
    "<EmptyElement/></ListBucketResult>";

static void test_xml_list(void)
{
    struct collect c;
    memset(&c, 0, sizeof c);
    int truncated = -1;
    char token[256];
    CHECK_EQ_INT(s3_parse_list(page1, strlen(page1), collect_fn, &c, &truncated, token, sizeof token),
                 FR_OK);
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_STR(c.keys[0], "wiki/a&b.parquet");
    CHECK_EQ_INT(c.sizes[0], 434234);
    CHECK_EQ_INT(c.mtimes[0], 1255369830000LL); /* date -u -d 2009-10-12T17:50:30Z +%s */
    CHECK_EQ_STR(c.keys[1], "wiki/\xE1\x88\xB4" "A");
    CHECK_EQ_INT(c.sizes[1], 0);
    CHECK_EQ_INT(c.mtimes[1], -1);
    CHECK_EQ_INT(truncated, 1);
    CHECK_EQ_STR(token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    CHECK_EQ_INT(s3_parse_list(page2, strlen(page2), collect_fn, &c, &truncated, token, sizeof token),
                 FR_OK);
    CHECK_EQ_INT(c.n, 3);
    CHECK_EQ_STR(c.keys[2], "wiki/z");
    CHECK_EQ_INT(truncated, 0);
    CHECK_EQ_STR(token, "");
}

static void test_xml_malformed(void)
{
    static const char *bad[] = {
        "",
        "<ListBucketResult>",                                              /* unclosed */
        "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></ListBucketResult>", /* mismatched */
        "<ListBucketResult></ListBucketResult><Extra/>",                   /* two roots */
        "junk<ListBucketResult></ListBucketResult>",                       /* text outside */
        "<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a&#0;</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>a</Key><Size>12x</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", /* no key */
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",   /* no token */
        "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
        "<Error><Code>InternalError</Code></Error>",                       /* not a listing */
        "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketRes", /* cut */
        "<ListBucketResult><![CDATA[x]]></ListBucketResult>",
        "<a><b><c><d><e><f><g><h><i>deep</i></h></g></f></e></d></c></b></a>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct collect c;
        memset(&c, 0, sizeof c);
        int truncated;
        char token[64];
        int rc = s3_parse_list(bad[i], strlen(bad[i]), collect_fn, &c, &truncated, token, sizeof token);
        if (rc != FR_EPROTO) {
            fprintf(stderr, "malformed case %zu accepted (%d)\n", i, rc);
        }
        CHECK_EQ_INT(rc, FR_EPROTO);
    }
    /* every prefix of a valid page is rejected: a cut answer never passes */
    size_t n = strlen(page1);
    size_t last_gt = (size_t)(strrchr(page1, '>') - page1);
    for (size_t cut = 0; cut <= last_gt; cut++) {
        struct collect c;
        memset(&c, 0, sizeof c);
        int truncated;
        char token[256];
        int rc = s3_parse_list(page1, cut, collect_fn, &c, &truncated, token, sizeof token);
        if (rc != FR_EPROTO) {
            fprintf(stderr, "prefix of %zu bytes accepted\n", cut);
            CHECK(0);
            break;
        }
    }
    (void)n;
}

static int upload_fn(void *arg, const char *key, const char *id, int64_t initiated)
{
    struct collect *c = arg;
    snprintf(c->keys[c->n], sizeof c->keys[0], "%s|%s", key, id);
    c->mtimes[c->n] = initiated;
    c->n++;
    return FR_OK;
}

static void test_xml_answers(void)
{
    char id[128], code[64], msg[128];
    const char *init = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
                       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>b</Bucket>"
                       "<Key>k</Key><UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>";
    CHECK_EQ_INT(s3_parse_upload_id(init, strlen(init), id, sizeof id), FR_OK);
    CHECK_EQ_STR(id, "VXBsb2FkIElE");
    const char *noid = "<InitiateMultipartUploadResult><Key>k</Key></InitiateMultipartUploadResult>";
    CHECK_EQ_INT(s3_parse_upload_id(noid, strlen(noid), id, sizeof id), FR_EPROTO);
    const char *err = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SignatureDoesNotMatch"
                      "</Code><Message>The request signature we calculated does not match</Message>"
                      "<RequestId>4442587FB7D0A2F9</RequestId></Error>";
    CHECK_EQ_INT(s3_parse_error(err, strlen(err), code, sizeof code, msg, sizeof msg), FR_OK);
    CHECK_EQ_STR(code, "SignatureDoesNotMatch");
    CHECK_EQ_STR(msg, "The request signature we calculated does not match");
    CHECK_EQ_INT(s3_parse_error(page2, strlen(page2), code, sizeof code, msg, sizeof msg),
                 FR_ENOTFOUND);
    CHECK_EQ_INT(s3_parse_error("<Error><Code>x", 14, code, sizeof code, msg, sizeof msg),
                 FR_ENOTFOUND);
    const char *ups = "<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>true</IsTruncated>"
                      "<NextKeyMarker>k2</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>"
                      "<Upload><Key>k1</Key><UploadId>u1</UploadId>"
                      "<Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
                      "<Upload><Key>k2</Key><UploadId>u2</UploadId></Upload>"
                      "</ListMultipartUploadsResult>";
    struct collect c;
    memset(&c, 0, sizeof c);
    int truncated;
    char km[64], im[64];
    CHECK_EQ_INT(s3_parse_uploads(ups, strlen(ups), upload_fn, &c, &truncated, km, im, sizeof km),
                 FR_OK);
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_STR(c.keys[0], "k1|u1");
    CHECK_EQ_INT(c.mtimes[0], 1289422113000LL); /* date -u -d 2010-11-10T20:48:33Z +%s */
    CHECK_EQ_STR(c.keys[1], "k2|u2");
    CHECK_EQ_INT(truncated, 1);
    CHECK_EQ_STR(km, "k2");
    CHECK_EQ_STR(im, "u2");
    CHECK_EQ_INT(s3_parse_time("Wed, 12 Oct 2009 17:50:00 GMT"), 1255369800000LL);
    CHECK_EQ_INT(s3_parse_time("yesterday"), -1);
}

/* ------------------------------------------------------------- mapping -- */

static void test_uri_and_keys(void)
{
    char bucket[64], prefix[256];
    CHECK_EQ_INT(fr_s3_parse_uri("s3://lake/wh/prod/", bucket, sizeof bucket, prefix, sizeof prefix),
                 FR_OK);
    CHECK_EQ_STR(bucket, "lake");
    CHECK_EQ_STR(prefix, "wh/prod");
    CHECK_EQ_INT(fr_s3_parse_uri("s3://lake", bucket, sizeof bucket, prefix, sizeof prefix), FR_OK);
    CHECK_EQ_STR(prefix, "");
    CHECK_EQ_INT(fr_s3_parse_uri("s3:///x", bucket, sizeof bucket, prefix, sizeof prefix), FR_EINVAL);
    CHECK_EQ_INT(fr_s3_parse_uri("file:///x", bucket, sizeof bucket, prefix, sizeof prefix),
                 FR_EINVAL);

    struct fr_s3_io *io = NULL;
    char key[256];
    CHECK_EQ_INT(fr_s3_io_open(NULL, "/wh/prod/", "/data/lake/warehouse/", &io), FR_OK);
    CHECK_EQ_INT(fr_s3_io_key(io, "/data/lake/warehouse/wiki/t/metadata/v1.metadata.json", key,
                              sizeof key),
                 FR_OK);
    CHECK_EQ_STR(key, "wh/prod/wiki/t/metadata/v1.metadata.json");
    CHECK_EQ_INT(fr_s3_io_key(io, "/data/lake/warehousex/a", key, sizeof key), FR_EINVAL);
    CHECK_EQ_INT(fr_s3_io_key(io, "/data/lake/warehouse/", key, sizeof key), FR_EINVAL);
    CHECK_EQ_INT(fr_s3_io_key(io, "/elsewhere/a", key, sizeof key), FR_EINVAL);
    CHECK_EQ_INT(fr_s3_io_key(io, "/data/lake/warehouse/wiki/t", key, 8), FR_ETOOBIG);
    fr_s3_io_close(io);
    CHECK_EQ_INT(fr_s3_io_open(NULL, NULL, "/w", &io), FR_OK);
    CHECK_EQ_INT(fr_s3_io_key(io, "/w/a b/c", key, sizeof key), FR_OK);
    CHECK_EQ_STR(key, "a b/c");
    fr_s3_io_close(io);
    fr_s3_io_close(NULL);
}

static void test_open_checks(void)
{
    struct fr_s3 *s3 = NULL;
    struct fr_s3_opts o;
    memset(&o, 0, sizeof o);
    o.endpoint = "ftp://127.0.0.1:9";
    o.bucket = "lake";
    o.access_key_id = "id";
    o.secret_access_key = "topsecret";
    CHECK_EQ_INT(fr_s3_open(&o, &s3), FR_ECONFIG);
    o.endpoint = "http://127.0.0.1:9/path";
    CHECK_EQ_INT(fr_s3_open(&o, &s3), FR_ECONFIG);
    o.endpoint = "http://127.0.0.1:9";
    o.bucket = "UPPER";
    CHECK_EQ_INT(fr_s3_open(&o, &s3), FR_ECONFIG);
    o.bucket = "lake";
    o.secret_access_key = "";
    CHECK_EQ_INT(fr_s3_open(&o, &s3), FR_ECONFIG);
    o.secret_access_key = "topsecret";
    CHECK_EQ_INT(fr_s3_open(&o, &s3), FR_OK);
    CHECK(s3 != NULL);
    fr_s3_close(s3);
    fr_s3_close(NULL);
    /* the error codes reserved for the object store are classed as documented */
    CHECK_EQ_INT(fr_err_class(FR_ECREDENTIAL), FR_ERRC_FATAL);
    CHECK_EQ_INT(fr_err_class(FR_EUNAVAILABLE), FR_ERRC_RETRY);
    CHECK_EQ_INT(fr_err_class(FR_EREFUSED), FR_ERRC_FATAL);
    CHECK_EQ_STR(fr_err_name(FR_ECREDENTIAL), "FR_ECREDENTIAL");
}

int main(void)
{
    RUN(test_sigv4_suite);
    RUN(test_sigv4_s3_examples);
    RUN(test_encode);
    RUN(test_xml_list);
    RUN(test_xml_malformed);
    RUN(test_xml_answers);
    RUN(test_uri_and_keys);
    RUN(test_open_checks);
    return check_report();
}
