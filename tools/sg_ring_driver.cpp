/* tools/sg_ring_driver.cpp -- issue 30 item 6: what one "driver" actor would
 * save against tpusim's per-chip actors, measured on SimGrid alone (nothing of
 * tpusim). A 16x16x16 torus cluster (4096 hosts); STEPS ring steps along the
 * first axis, every sending chip moving BYTES to its +1 neighbour per step.
 *   MODE 0:  one actor per chip (put_async to the neighbour's mailbox, get
 *            its own, wait the put): today's shape of --all-chips;
 *   MODE 1:  one driver actor posts every chip's Comm::sendto_async of the
 *            step and waits them with Comm::wait_all;
 *   MODE K>1: K drivers, each a 1/K share of the chips, a barrier per step.
 * SENDERS (default 4096) limits how many chips send (mode 0: how many chips
 * have an actor; a multiple of 16, so that whole rings send), to
 * show how the cost grows with the comms in flight. Every mode prints the
 * same simulated time. C++ because SimGrid 3.32's C API has neither
 * sendto_async nor wait_all on a vector; built on demand only
 * (make build/release/sg_ring_driver), never linked into tpusim.
 *   usage: sg_ring_driver MODE BYTES STEPS [SENDERS]
 *
 * Measured (issue 30 session 8, Debian's SimGrid 3.32, the 2-core machine
 * shared with other jobs; user CPU, one run each, 30 steps of 1 MiB, all
 * modes 1.110971 ms simulated; 1 GiB: the same CPU, 0.738357 s simulated):
 *   senders      1024     2048     4096
 *   mode 0      0.11 s   0.46 s   1.07-1.25 s   (155 MB)
 *   mode 1      0.11 s   0.31 s   0.86-0.92 s   ( 61 MB)
 *   mode 16                       0.86 s
 * A driver saves 20-30 % of SimGrid's cost per transfer, not the 2-3x that
 * issue 30.6 needs (tpusim 1 GiB all-reduce on 16x16x16, --all-chips: 2.35-
 * 3.2 s user against ASTRA-sim's 1.06 s). Both modes grow faster than the
 * transfers: under perf --call-graph dwarf, 37-47 % of mode 1 and mode 16
 * is one unexported loop called from CommImpl::finish (in
 * EngineImpl::handle_ended_actions) that scans a std::list and splices
 * (libstdc++'s list::remove shape) -- a per-finish cost that grows with the
 * transfers in flight. The list is not the driver's own: its share stays
 * 39 % with 16 drivers and 32 % with 256 (16 transfers each), so it is one
 * list shared by every sendto_async transfer in flight (mode 0's mailbox
 * transfers do not show it; they pay simcalls and context switches
 * instead), and no driver layout removes it. network/optim Full or
 * Lazy, maxmin-selective-update and network/model:CM02 move none of this. */
#include <simgrid/s4u.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace sg4 = simgrid::s4u;

static const int N = 4096;
static int g_steps, g_senders = N, g_drivers = 1;
static uint64_t g_bytes;
static std::vector<sg4::Host *> g_hosts;
static sg4::BarrierPtr g_bar;

static int next_on_axis0(int i)
{
    int x = i % 16;
    return i - x + (x + 1) % 16;
}

static void chip_main(int i)
{
    static int token;
    sg4::Mailbox *mine = sg4::Mailbox::by_name("m" + std::to_string(i));
    sg4::Mailbox *peer = sg4::Mailbox::by_name("m" + std::to_string(next_on_axis0(i)));
    for (int s = 0; s < g_steps; s++) {
        sg4::CommPtr put = peer->put_async(&token, g_bytes);
        mine->get<int>();
        put->wait();
    }
}

static void driver_main(int k)
{
    int per = g_senders / g_drivers;
    for (int s = 0; s < g_steps; s++) {
        std::vector<sg4::CommPtr> step;
        step.reserve(per);
        for (int i = k * per; i < (k + 1) * per; i++)
            step.push_back(sg4::Comm::sendto_async(g_hosts[i], g_hosts[next_on_axis0(i)], g_bytes));
        sg4::Comm::wait_all(step);
        if (g_bar)
            g_bar->wait();
    }
}

static std::string write_platform()
{
    char path[] = "/tmp/sg_ring_driver_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return "";
    const char *xml =
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n"
        "<cluster id=\"c\" prefix=\"c\" suffix=\"\" radical=\"0-4095\" speed=\"1Gf\" bw=\"45GBps\""
        " lat=\"1us\" topology=\"TORUS\" topo_parameters=\"16,16,16\"/>\n"
        "</zone></platform>\n";
    ssize_t len = (ssize_t)std::string(xml).size();
    bool ok = write(fd, xml, (size_t)len) == len;
    close(fd);
    return ok ? std::string(path) : "";
}

int main(int argc, char **argv)
{
    sg4::Engine e(&argc, argv);
    if (argc < 4) {
        fprintf(stderr, "usage: sg_ring_driver MODE BYTES STEPS [SENDERS]\n");
        return 2;
    }
    int mode = atoi(argv[1]);
    g_bytes = strtoull(argv[2], nullptr, 10);
    g_steps = atoi(argv[3]);
    if (argc > 4)
        g_senders = atoi(argv[4]);
    if (mode < 0 || g_steps < 0 || g_senders < 16 || g_senders > N || g_senders % 16) {
        fprintf(stderr, "sg_ring_driver: MODE >= 0, STEPS >= 0, SENDERS a multiple of 16 up to %d\n", N);
        return 2;
    }
    std::string plat = write_platform();
    if (plat.empty())
        return 1;
    e.load_platform(plat);
    unlink(plat.c_str());
    for (int i = 0; i < N; i++)
        g_hosts.push_back(e.host_by_name("c" + std::to_string(i)));
    if (mode == 0) {
        for (int i = 0; i < g_senders; i++)
            sg4::Actor::create("chip", g_hosts[i], chip_main, i);
    } else {
        g_drivers = mode;
        if (g_drivers > 1)
            g_bar = sg4::Barrier::create(g_drivers);
        for (int k = 0; k < g_drivers; k++)
            sg4::Actor::create("driver", g_hosts[k], driver_main, k);
    }
    e.run();
    printf("mode %d senders %d steps %d bytes %llu: simulated %.9f s\n", mode, g_senders,
           g_steps, (unsigned long long)g_bytes, sg4::Engine::get_clock());
    return 0;
}
