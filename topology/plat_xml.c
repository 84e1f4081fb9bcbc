/* topology/plat_xml.c -- writes the SimGrid platform of a slice. */
#include "topology/plat_xml.h"

char *plat_host_name(const struct topo *t, int rank, char *buf, size_t n)
{
    snprintf(buf, n, "chip%d", topo_sim_node(t, rank));
    return buf;
}

/* The torus axes as SimGrid's topo_parameters ("16,16"; axes of length 1
 * are left out: SimGrid would declare their self-link twice). */
static void torus_dims(const struct topo *t, char *dims, size_t n)
{
    int len = 0;
    dims[0] = '\0';
    for (int i = 0; i < t->ndims; i++)
        if (topo_sim_dim(t, i) > 1)
            len += snprintf(dims + len, n - (size_t)len, "%s%d", len ? "," : "",
                            topo_sim_dim(t, i));
    if (len == 0)
        snprintf(dims, n, "1");
}

void plat_write_cluster(FILE *out, const struct topo *t, const struct plat_params *p,
                        const char *id, const char *prefix)
{
    char dims[64];
    torus_dims(t, dims, sizeof dims);
    fprintf(out,
            "  <cluster id=\"%s\" prefix=\"%s\" suffix=\"\" radical=\"0-%d\"\n"
            "           speed=\"%.17gf\" core=\"%d\"\n"
            "           bw=\"%.17gBps\" lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"\n"
            "           limiter_link=\"%.17gBps\"\n"
            "           topology=\"TORUS\" topo_parameters=\"%s\"/>\n",
            id, prefix, topo_sim_nodes(t) - 1, p->core_flops, p->cores, p->ici_bw_Bps,
            p->ici_lat_s, p->hbm_bw_Bps, dims);
}

int plat_write_xml(FILE *out, const struct topo *t, const struct plat_params *p)
{
    char dims[64];
    torus_dims(t, dims, sizeof dims);
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    fprintf(out, "  <!-- %d chips; torus %s (axes without wraparound are doubled and only\n"
                 "       their lower half is used); limiter link = HBM -->\n",
            t->nchips, dims);
    plat_write_cluster(out, t, p, "pod", "chip");
    fprintf(out, "</platform>\n");
    return ferror(out) ? -1 : 0;
}
