/* topology/plat_xml.c -- writes the SimGrid platform of a slice. */
#include "topology/plat_xml.h"

char *plat_host_name(const struct topo *t, int rank, char *buf, size_t n)
{
    snprintf(buf, n, "chip%d", topo_sim_node(t, rank));
    return buf;
}

char *plat_pcie_host_name(int rank, bool to_device, char *buf, size_t n)
{
    snprintf(buf, n, "pcie_%s%d", to_device ? "down" : "up", rank);
    return buf;
}

void plat_write_pcie_zone(FILE *out, int nchips, double Bps)
{
    char name[48];
    fprintf(out, "  <!-- the PCIe link of each chip, one host per direction (speed: bytes/s) -->\n"
                 "  <zone id=\"pcie\" routing=\"None\">\n");
    for (int i = 0; i < nchips; i++)
        for (int down = 0; down < 2; down++)
            fprintf(out, "    <host id=\"%s\" speed=\"%.17gf\"/>\n",
                    plat_pcie_host_name(i, down, name, sizeof name), Bps);
    fprintf(out, "  </zone>\n");
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
    fprintf(out, "  <cluster id=\"%s\" prefix=\"%s\" suffix=\"\" radical=\"0-%d\"\n"
                 "           speed=\"%.17gf", id, prefix, topo_sim_nodes(t) - 1, p->core_flops);
    for (int i = 0; i < p->npstates; i++)
        fprintf(out, ",%.17gf", p->core_flops * p->pstate_factors[i]);
    fprintf(out,
            "\" core=\"%d\"\n"
            "           bw=\"%.17gBps\" lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"\n"
            "           limiter_link=\"%.17gBps\"\n"
            "           topology=\"TORUS\" topo_parameters=\"%s\"/>\n",
            p->cores, p->ici_bw_Bps,
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
    if (p->pcie_Bps > 0)
        fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
    plat_write_cluster(out, t, p, "pod", "chip");
    if (p->pcie_Bps > 0) {
        plat_write_pcie_zone(out, t->nchips, p->pcie_Bps);
        fprintf(out, "</zone>\n");
    }
    fprintf(out, "</platform>\n");
    return ferror(out) ? -1 : 0;
}
