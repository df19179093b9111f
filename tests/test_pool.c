/* Unit tests for host/pool: generation-checked slot handles, reuse, limit
   and pointer stability. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../host/pool.h"

/* ---- a checking allocator ----
   Every block carries its size in a header so a wrong osize (the
   lua_Alloc contract) is caught; `budget` makes allocations fail. */

#define HDR 16

typedef struct memstat {
  long long live; /* bytes held */
  long calls;     /* successful allocations and reallocations */
  long budget;    /* allocations left before failing; < 0: unlimited */
  int bad_osize;  /* frees or reallocs that passed the wrong old size */
} memstat;

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  memstat *m = ud;
  char *base = ptr ? (char *)ptr - HDR : NULL;
  if (base && *(size_t *)base != osize) m->bad_osize++;
  if (nsize == 0) {
    if (base) {
      m->live -= (long long)osize;
      free(base);
    }
    return NULL;
  }
  if (m->budget == 0) return NULL;
  if (m->budget > 0) m->budget--;
  char *nb = realloc(base, nsize + HDR);
  if (!nb) return NULL;
  *(size_t *)nb = nsize;
  m->live += (long long)nsize - (base ? (long long)osize : 0);
  m->calls++;
  return nb + HDR;
}

typedef struct item {
  weft_slot h;
  uint32_t value;
  double payload[3];
} item;

static void pool_new(weft_pool *p, memstat *m, uint32_t elem, uint32_t limit) {
  memset(m, 0, sizeof *m);
  m->budget = -1;
  weft__pool_init(p, elem, limit, count_alloc, m);
}

static void pool_end(weft_pool *p, memstat *m) {
  weft__pool_destroy(p);
  assert_int_equal(m->live, 0);
  assert_int_equal(m->bad_osize, 0);
}

/* ---- tests ---- */

static void test_alloc_returns_live_zeroed_element_with_nonzero_handle(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  weft_id a = 0, b = 0;
  item *x = weft__pool_alloc(&p, &a);
  item *y = weft__pool_alloc(&p, &b);
  assert_non_null(x);
  assert_non_null(y);
  assert_ptr_not_equal(x, y);
  assert_true(a != 0);
  assert_true(b != 0);
  assert_true(a != b);
  assert_ptr_equal(weft__pool_get(&p, a), x);
  assert_ptr_equal(weft__pool_get(&p, b), y);
  assert_true(weft__pool_id(x) == a);
  assert_true(weft__pool_id(y) == b);
  assert_true(weft__slot_live(x));
  assert_int_equal(x->value, 0);
  assert_true(x->payload[0] == 0.0 && x->payload[2] == 0.0);
  assert_int_equal(p.used, 2);
  assert_ptr_equal(weft__pool_at(&p, WEFT_ID_INDEX(a)), x);
  pool_end(&p, &m);
}

static void test_freed_handle_is_stale(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  weft_id a, b;
  item *x = weft__pool_alloc(&p, &a);
  item *y = weft__pool_alloc(&p, &b);
  assert_non_null(x);
  y->value = 42;
  weft__pool_free(&p, a);
  assert_null(weft__pool_get(&p, a));
  assert_false(weft__slot_live(x));
  assert_int_equal(p.used, 1);
  /* Freeing a stale handle again changes nothing. */
  weft__pool_free(&p, a);
  assert_int_equal(p.used, 1);
  assert_ptr_equal(weft__pool_get(&p, b), y);
  assert_int_equal(y->value, 42);
  pool_end(&p, &m);
}

static void test_freed_slot_is_reused_last_in_first_out_with_new_generation(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  weft_id a, b, c;
  item *xa = weft__pool_alloc(&p, &a);
  item *xb = weft__pool_alloc(&p, &b);
  item *xc = weft__pool_alloc(&p, &c);
  assert_non_null(xa);
  assert_non_null(xb);
  assert_non_null(xc);
  xb->value = 7;
  weft__pool_free(&p, b);
  weft_id b2;
  item *xb2 = weft__pool_alloc(&p, &b2);
  assert_ptr_equal(xb2, xb); /* same slot */
  assert_int_equal(WEFT_ID_INDEX(b2), WEFT_ID_INDEX(b));
  assert_true(WEFT_ID_GEN(b2) != WEFT_ID_GEN(b)); /* new generation */
  assert_true(b2 != b);
  assert_int_equal(xb2->value, 0);    /* zeroed again */
  assert_null(weft__pool_get(&p, b)); /* old handle stays stale */
  assert_ptr_equal(weft__pool_get(&p, b2), xb2);
  /* Freeing through the old handle must not free the new occupant. */
  weft__pool_free(&p, b);
  assert_ptr_equal(weft__pool_get(&p, b2), xb2);
  assert_int_equal(p.used, 3);
  /* Last freed, first reused. */
  weft__pool_free(&p, a);
  weft__pool_free(&p, c);
  weft_id n1, n2;
  assert_ptr_equal(weft__pool_alloc(&p, &n1), xc);
  assert_ptr_equal(weft__pool_alloc(&p, &n2), xa);
  assert_null(weft__pool_get(&p, a));
  assert_null(weft__pool_get(&p, c));
  pool_end(&p, &m);
}

static void test_many_reuses_of_one_slot_never_revive_old_handles(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  enum { N = 1000 };
  static weft_id old[N];
  for (int i = 0; i < N; i++) {
    assert_non_null(weft__pool_alloc(&p, &old[i]));
    if (i > 0) assert_int_equal(WEFT_ID_INDEX(old[i]), WEFT_ID_INDEX(old[0]));
    weft__pool_free(&p, old[i]);
  }
  weft_id cur;
  assert_non_null(weft__pool_alloc(&p, &cur));
  for (int i = 0; i < N; i++) {
    assert_true(old[i] != cur);
    assert_null(weft__pool_get(&p, old[i]));
  }
  pool_end(&p, &m);
}

static void test_limit_caps_live_slots(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 3);
  weft_id id[4] = {0};
  for (int i = 0; i < 3; i++) {
    assert_false(weft__pool_full(&p));
    assert_non_null(weft__pool_alloc(&p, &id[i]));
  }
  assert_true(weft__pool_full(&p));
  assert_null(weft__pool_alloc(&p, &id[3]));
  assert_int_equal(p.used, 3);
  weft__pool_free(&p, id[1]);
  assert_false(weft__pool_full(&p));
  assert_non_null(weft__pool_alloc(&p, &id[3]));
  assert_true(weft__pool_full(&p));
  pool_end(&p, &m);
}

static void test_pointers_stay_valid_across_growth(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  enum { N = 3 * WEFT_POOL_CHUNK + 17 };
  static weft_id ids[N];
  static item *ptr[N];
  for (uint32_t i = 0; i < N; i++) {
    ptr[i] = weft__pool_alloc(&p, &ids[i]);
    assert_non_null(ptr[i]);
    ptr[i]->value = i;
    ptr[i]->payload[1] = (double)i * 0.5;
  }
  assert_true(weft__pool_capacity(&p) >= N);
  for (uint32_t i = 0; i < N; i++) {
    assert_ptr_equal(weft__pool_get(&p, ids[i]), ptr[i]);
    assert_int_equal(ptr[i]->value, i);
    assert_true(ptr[i]->payload[1] == (double)i * 0.5);
  }
  assert_int_equal(p.used, N);
  pool_end(&p, &m);
}

static void test_invalid_handles_resolve_to_null(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  /* Nothing allocated yet. */
  assert_null(weft__pool_get(&p, 0));
  assert_null(weft__pool_get(&p, WEFT_ID_MAKE(0, 1)));
  weft_id a;
  assert_non_null(weft__pool_alloc(&p, &a));
  assert_null(weft__pool_get(&p, 0)); /* 0 is never valid */
  assert_null(weft__pool_get(&p, WEFT_ID_MAKE(WEFT_ID_INDEX(a), WEFT_ID_GEN(a) + 2)));
  assert_null(weft__pool_get(&p, WEFT_ID_MAKE(WEFT_ID_INDEX(a), WEFT_ID_GEN(a) + 1)));
  assert_null(weft__pool_get(&p, WEFT_ID_MAKE(1u << 30, 1))); /* beyond capacity */
  assert_null(weft__pool_get(&p, WEFT_ID_MAKE(UINT32_MAX, UINT32_MAX)));
  assert_null(weft__pool_get(&p, WEFT_ID_MAKE(5, 0))); /* never-used slot */
  weft__pool_free(&p, WEFT_ID_MAKE(1u << 30, 1));      /* harmless */
  weft__pool_free(&p, 0);
  assert_int_equal(p.used, 1);
  pool_end(&p, &m);
}

static void test_elements_are_aligned_and_disjoint(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  /* An odd size: the pool must still give 8-byte aligned elements. */
  uint32_t esize = (uint32_t)sizeof(weft_slot) + 13;
  pool_new(&p, &m, esize, 0);
  enum { N = 40 };
  unsigned char *e[N];
  weft_id ids[N];
  for (int i = 0; i < N; i++) {
    e[i] = weft__pool_alloc(&p, &ids[i]);
    assert_non_null(e[i]);
    assert_int_equal((uintptr_t)e[i] % 8, 0);
    memset(e[i] + sizeof(weft_slot), 0xA0 + (i & 15), esize - sizeof(weft_slot));
  }
  for (int i = 0; i < N; i++) {
    assert_ptr_equal(weft__pool_get(&p, ids[i]), e[i]);
    for (uint32_t k = sizeof(weft_slot); k < esize; k++) assert_int_equal(e[i][k], 0xA0 + (i & 15));
  }
  pool_end(&p, &m);
}

static void test_out_of_memory_returns_null_and_pool_recovers(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  m.budget = 0;
  weft_id a = 0;
  assert_null(weft__pool_alloc(&p, &a));
  assert_int_equal(p.used, 0);
  m.budget = 1; /* the chunk table succeeds, the chunk fails */
  assert_null(weft__pool_alloc(&p, &a));
  assert_int_equal(p.used, 0);
  m.budget = -1;
  item *x = weft__pool_alloc(&p, &a);
  assert_non_null(x);
  assert_ptr_equal(weft__pool_get(&p, a), x);
  /* Fill the first chunk, then fail the growth into a second one. */
  for (uint32_t i = 1; i < WEFT_POOL_CHUNK; i++) {
    weft_id t;
    assert_non_null(weft__pool_alloc(&p, &t));
  }
  m.budget = 0;
  weft_id t;
  assert_null(weft__pool_alloc(&p, &t));
  assert_int_equal(p.used, WEFT_POOL_CHUNK);
  assert_ptr_equal(weft__pool_get(&p, a), x);
  m.budget = -1;
  assert_non_null(weft__pool_alloc(&p, &t));
  pool_end(&p, &m);
}

static void test_destroy_releases_every_chunk(void **state) {
  (void)state;
  weft_pool p;
  memstat m;
  pool_new(&p, &m, sizeof(item), 0);
  for (uint32_t i = 0; i < 5 * WEFT_POOL_CHUNK; i++) {
    weft_id t;
    assert_non_null(weft__pool_alloc(&p, &t));
    if (i % 3 == 0) weft__pool_free(&p, t);
  }
  assert_true(m.live > 0);
  weft__pool_destroy(&p);
  assert_int_equal(m.live, 0);
  assert_int_equal(m.bad_osize, 0);
  /* A destroyed pool holds nothing and can be destroyed again. */
  assert_int_equal(p.used, 0);
  weft__pool_destroy(&p);
  assert_int_equal(m.live, 0);
}

/* Side data: a block per chunk of slot indices, made only for the chunks
   asked for; an element keeps what was written to it while other blocks
   are made; its bytes are counted; out of memory is NULL and recoverable;
   freeing returns every byte. */
static void test_side_data_is_made_per_chunk_on_demand(void **state) {
  (void)state;
  memstat m;
  memset(&m, 0, sizeof m);
  m.budget = -1;
  weft_side t = {.elem_size = sizeof(item)};
  assert_int_equal(weft__side_bytes(&t), 0);
  item *far = weft__side_make(&t, 3 * WEFT_POOL_CHUNK + 7, count_alloc, &m);
  assert_non_null(far);
  far->value = 42;
  size_t one = weft__side_bytes(&t);
  assert_true(one >= sizeof(item) * WEFT_POOL_CHUNK); /* one block, not four */
  assert_true(one < 2 * sizeof(item) * WEFT_POOL_CHUNK);
  m.budget = 0; /* the next chunk's block cannot be made */
  assert_null(weft__side_make(&t, 5, count_alloc, &m));
  assert_ptr_equal(weft__side_make(&t, 3 * WEFT_POOL_CHUNK + 7, count_alloc, &m), far);
  m.budget = -1;
  item *near = weft__side_make(&t, 5, count_alloc, &m);
  assert_non_null(near);
  assert_true(near != far);
  assert_ptr_equal(weft__side_at(&t, 5), near);
  assert_ptr_equal(weft__side_at(&t, 3 * WEFT_POOL_CHUNK + 7), far);
  assert_int_equal(far->value, 42);
  assert_int_equal((long long)weft__side_bytes(&t), m.live);
  weft__side_free(&t, count_alloc, &m);
  assert_int_equal(m.live, 0);
  assert_int_equal(m.bad_osize, 0);
  assert_int_equal(weft__side_bytes(&t), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_returns_live_zeroed_element_with_nonzero_handle),
      cmocka_unit_test(test_freed_handle_is_stale),
      cmocka_unit_test(test_freed_slot_is_reused_last_in_first_out_with_new_generation),
      cmocka_unit_test(test_many_reuses_of_one_slot_never_revive_old_handles),
      cmocka_unit_test(test_limit_caps_live_slots),
      cmocka_unit_test(test_pointers_stay_valid_across_growth),
      cmocka_unit_test(test_invalid_handles_resolve_to_null),
      cmocka_unit_test(test_elements_are_aligned_and_disjoint),
      cmocka_unit_test(test_out_of_memory_returns_null_and_pool_recovers),
      cmocka_unit_test(test_destroy_releases_every_chunk),
      cmocka_unit_test(test_side_data_is_made_per_chunk_on_demand),
  };
  return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
