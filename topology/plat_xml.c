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

static void write_pcie_zone(FILE *out, const struct topo *t, double Bps)
{
    char name[48];
    fprintf(out, "  <!-- the PCIe link of each chip, one host per direction (speed: bytes/s) -->\n"
                 "  <zone id=\"pcie\" routing=\"None\">\n");
    for (int i = 0; i < t->nchips; i++)
        for (int down = 0; down < 2; down++)
            fprintf(out, "    <host id=\"%s\" speed=\"%.17gf\"/>\n",
                    plat_pcie_host_name(i, down, name, sizeof name), Bps);
    fprintf(out, "  </zone>\n");
}

int plat_write_xml(FILE *out, const struct topo *t, const struct plat_params *p)
{
    /* axes of length 1 are left out: SimGrid would declare their self-link twice */
    char dims[64] = "";
    int len = 0;
    for (int i = 0; i < t->ndims; i++)
        if (topo_sim_dim(t, i) > 1)
            len += snprintf(dims + len, sizeof dims - (size_t)len, "%s%d", len ? "," : "",
                            topo_sim_dim(t, i));
    if (len == 0)
        snprintf(dims, sizeof dims, "1");
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    fprintf(out, "  <!-- %d chips; torus %s (axes without wraparound are doubled and only\n"
                 "       their lower half is used); limiter link = HBM -->\n",
            t->nchips, dims);
    if (p->pcie_Bps > 0)
        fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
    fprintf(out,
            "  <cluster id=\"pod\" prefix=\"chip\" suffix=\"\" radical=\"0-%d\"\n"
            "           speed=\"%.17gf\" core=\"%d\"\n"
            "           bw=\"%.17gBps\" lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"\n"
            "           limiter_link=\"%.17gBps\"\n"
            "           topology=\"TORUS\" topo_parameters=\"%s\"/>\n",
            topo_sim_nodes(t) - 1, p->core_flops, p->cores, p->ici_bw_Bps, p->ici_lat_s,
            p->hbm_bw_Bps, dims);
    if (p->pcie_Bps > 0) {
        write_pcie_zone(out, t, p->pcie_Bps);
        fprintf(out, "</zone>\n");
    }
    fprintf(out, "</platform>\n");
    return ferror(out) ? -1 : 0;
}
