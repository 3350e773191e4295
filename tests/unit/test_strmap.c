/* support/strmap: the string set the importer and the .tg front end check
 * names against. Every key added is found with its value after any number
 * of growths, a key added twice is reported, and the table stays at most
 * half full (so a lookup probes a few slots, not a run of the table). */
#include "support/strmap.h"
#include "unit.h"

static void test_empty(void) {
    StrMap m = {0};
    CHECK(strmap_find(&m, "x") == NULL);
    CHECK(strmap_find(&m, "") == NULL);
    CHECK_INT(0, m.count);
}

static void test_many(void) {
    Arena a = {0};
    StrMap m = {0};
    enum { N = 100000 };
    for (int k = 0; k < N; k++) {
        bool added = false;
        int *v = strmap_at(&a, &m, arena_printf(&a, "name_%d", k), &added);
        if (!CHECK(added)) break;
        *v = k * 3;
    }
    CHECK_INT(N, m.count);
    CHECK(m.cap >= 2 * m.count);
    int wrong = 0;
    for (int k = 0; k < N; k++) {
        char key[32];
        snprintf(key, sizeof key, "name_%d", k); /* another copy: compared by text */
        int *v = strmap_find(&m, key);
        wrong += !v || *v != k * 3;
    }
    CHECK_INT(0, wrong);
    CHECK(strmap_find(&m, "name_") == NULL);
    CHECK(strmap_find(&m, "name_100000") == NULL);
    arena_free(&a);
}

static void test_duplicates(void) {
    Arena a = {0};
    StrMap m = {0};
    CHECK(strmap_add(&a, &m, "y"));
    CHECK(strmap_add(&a, &m, ""));
    CHECK(!strmap_add(&a, &m, "y"));
    CHECK(!strmap_add(&a, &m, ""));
    CHECK(strmap_add(&a, &m, "y_2"));
    bool added = true;
    int *v = strmap_at(&a, &m, "y", &added);
    CHECK(!added);
    CHECK_INT(0, *v);
    *v = 7;
    CHECK_INT(7, *strmap_find(&m, "y"));
    CHECK_INT(3, m.count);
    arena_free(&a);
}

int main(void) {
    test_empty();
    test_many();
    test_duplicates();
    return unit_report("test_strmap");
}
