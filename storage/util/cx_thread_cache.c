/*
 * cx_thread_cache.c — per-thread memo slots (cx_thread_cache.h), on a
 * pthread key whose destructor frees a thread's slots when it exits.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util/cx_thread_cache.h"

static pthread_key_t slots_key;
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static bool slots_key_made;

static void
free_slots(void *p)
{
	cx_thread_cache *slots = p;

	for (int k = 0; k < CX_THREAD_CACHES; k++)
		cx_thread_cache_clear(&slots[k]);
	free(slots);
}

static void
make_key(void)
{
	slots_key_made = pthread_key_create(&slots_key, free_slots) == 0;
}

cx_thread_cache *
cx_thread_cache_get(cx_thread_cache_kind kind)
{
	cx_thread_cache *slots;

	pthread_once(&slots_once, make_key);
	if (!slots_key_made)
		return NULL;
	slots = pthread_getspecific(slots_key);
	if (slots == NULL)
	{
		slots = calloc(CX_THREAD_CACHES, sizeof(cx_thread_cache));
		if (slots == NULL)
			return NULL;
		if (pthread_setspecific(slots_key, slots) != 0)
		{
			free(slots);
			return NULL;
		}
	}
	return &slots[kind];
}

void
cx_thread_cache_clear(cx_thread_cache *slot)
{
	if (slot->p != NULL && slot->free_fn != NULL)
		slot->free_fn(slot->p);
	slot->p = NULL;
	slot->free_fn = NULL;
}

void *
cx_thread_spare_take(cx_thread_cache_kind kind)
{
	cx_thread_cache *slot = cx_thread_cache_get(kind);
	void	   *p = slot != NULL ? slot->p : NULL;

	if (p != NULL)
		slot->p = NULL;
	return p;
}

bool
cx_thread_spare_give(cx_thread_cache_kind kind, void *p,
					 void (*free_fn) (void *p))
{
	cx_thread_cache *slot = cx_thread_cache_get(kind);

	if (slot == NULL || slot->p != NULL)
		return false;
	slot->p = p;
	slot->free_fn = free_fn;
	return true;
}
