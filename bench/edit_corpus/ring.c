#include <stdlib.h>
#include <string.h>

#include "ring.h"

struct ring {
    size_t head;
    size_t tail;
    size_t size;
    char *data;
};

struct ring *ring_new(size_t size)
{
    struct ring *r = malloc(sizeof *r);
    if (r == NULL) {
        return NULL;
    }
    r->data = malloc(size);
    if (r->data == NULL) {
        free(r);
        return NULL;
    }
    r->head = 0;
    r->tail = 0;
    r->size = size;
    return r;
}

size_t ring_used(const struct ring *r)
{
    return (r->head + r->size - r->tail) % r->size;
}

int ring_put(struct ring *r, char c)
{
    if (ring_used(r) == r->size - 1) {
        return -1;
    }
    r->data[r->head] = c;
    r->head = (r->head + 1) % r->size;
    return 0;
}

int ring_get(struct ring *r, char *c)
{
    if (r->head == r->tail) {
        return -1;
    }
    *c = r->data[r->tail];
    r->tail = (r->tail + 1) % r->size;
    return 0;
}

void ring_free(struct ring *r)
{
    if (r != NULL) {
        free(r->data);
        free(r);
    }
}
