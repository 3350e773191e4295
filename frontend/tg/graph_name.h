/* Graph names that `tgc compile` cannot name an API after (graph_name.c). */
#ifndef TGC_FRONTEND_TG_GRAPH_NAME_H
#define TGC_FRONTEND_TG_GRAPH_NAME_H

/* The reserved prefix that `name` falls under (as "pthread_"), with what
 * owns it in *owner, or NULL when the name is free. */
const char *graph_name_reserved(const char *name, const char **owner);

#endif
