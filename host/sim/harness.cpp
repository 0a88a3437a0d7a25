// SPDX-License-Identifier: BSD-2-Clause
// Simulation twin harness: runs the rig's Verilog (Verilator) and bridges its UART
// pins to a TCP socket, bit by bit at the rig's own baud divisor, so the host talks
// to the simulation over exactly the byte protocol of a real rig. The fast twin is
// built with a divisor of 4 (7.5 Mbaud at the ECP5 boards' 30 MHz), the line-rate twin
// with the board's (10: 3 Mbaud); this harness shifts whatever divisor it is given.
//
// Usage: rtrig-sim --divisor N [--port P] [--poll CYCLES] [--parent PID] [--console PATH]
//                  [--trace PATH] [--ram PATH]
// Built with -DRTRIG_SOC (the reference SoC target): the harness also drives the SoC's
// 50 MHz clock beside the rig's (see clock_cycle), appends its console bytes and
// SIM_EXIT codes to --console and its TRACE words (one decimal per line) to --trace,
// and loads the SoC's RAM from --ram (required: one 32-bit hex word per line, as rtrig.host.sim.ram_file
// writes it). --record PATH (or $RTRIG_SOC_RECORD) records what the SoC's CPU executed
// around every STIM0 rising edge: see "Recording" below (rtrig.host.explain reads it).
// Prints "RTRIG-SIM LISTENING <port>" once it listens on 127.0.0.1; serves one
// client; exits when the client disconnects, on SIGTERM or SIGHUP, or when the parent
// process (--parent: the host that started it) dies, at any moment: before the client
// connects too (it then ends within LISTEN_POLL_MS).

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "Vrig_top.h"
#include "verilated.h"

static volatile sig_atomic_t stop_requested = 0;
static volatile sig_atomic_t stop_signal = 0;   // the signal that asked for it, if one

#ifdef RTRIG_SOC
static FILE *soc_console = nullptr, *soc_trace = nullptr;
static std::string soc_ram;  // --ram: the RAM image file, one 32-bit hex word per line

// The SoC's RAM image for the model's initial block ($readmemh of +rtrig_ram=FILE):
// the twin is built without one, so every firmware runs on the same build.
static bool soc_load_ram(VerilatedContext &ctx) {
    if (soc_ram.empty()) {
        fprintf(stderr, "rtrig-sim: the SoC twin needs --ram FILE (its RAM image)\n");
        return false;
    }
    std::string arg = "+rtrig_ram=" + soc_ram;
    const char *args[] = {"rtrig-sim", arg.c_str()};
    ctx.commandArgs(2, args);
    return true;
}

// The SoC clock beside the rig's, both from one PLL on a board: their rising edges
// align every lcm of the two periods. Times are in a unit that divides both half
// periods: the rig's half period is RTRIG_RIG_HALF units, the SoC's RTRIG_SOC_HALF (5
// and 3 for the ECP5 boards' 30 MHz rig and the 50 MHz SoC; rtrig.host.sim.builder
// defines both). The first SoC rising edge
// after reset is the rig's first.
//
// Only rising edges do anything (no logic of the twin runs on a falling edge or reads
// a clock as data), so a clock is lowered at the next evaluation after it rose, with
// whatever else happens then, and alone, at an evaluation of its own, only when its
// next rising edge comes first: the ECP5 boards' clocks need 10 evaluations per 100 ns
// instead of 14, the default twin's 2 per rig cycle as before.
static uint64_t rig_rise = RTRIG_RIG_HALF;  // time of the rig clock's next rising edge
static uint64_t soc_rise = RTRIG_RIG_HALF;  // time of the SoC clock's next rising edge

// ---- Recording (SoC twin, --record PATH): what the CPU executed around each pulse ----
// VexRiscv marks its last stage's PC, firing flag and trap signals `verilator public`;
// they are found through the scope table, and the CPU model beside them gives mstatus.MIE.
// Off (no --record), the cost is one predictable test per clock edge.
// File: 24-byte little-endian entries {u64 t, u64 aux, u32 pc, u32 flags}:
//   an instruction retired: t = SoC cycle, aux = instruction word, pc, flags = MIE
//     after it (bit 0);
//   a trap entry: t = SoC cycle, flags = REC_TRAP | cause code << 8 | exception (bit 2);
//   a STIM0 rising edge: t = SoC cycle, aux = rig cycle, flags = REC_EDGE.
// Bounded: the REC_PRE entries before each edge (a ring) and every entry of the
// REC_POST SoC cycles after it; nothing else.
#include "Vrig_top_VexRiscv.h"
#include "verilated_syms.h"
#include <cstddef>
enum : uint32_t { REC_MIE = 1, REC_TRAP = 2, REC_EXC = 4, REC_EDGE = 0x80000000u };
struct RecEntry { uint64_t t, aux; uint32_t pc, flags; };
static_assert(sizeof(RecEntry) == 24, "recording entry layout");
struct Recorder {
    FILE *out = nullptr;
    const uint32_t *pc = nullptr, *instr = nullptr;
    const uint8_t *firing = nullptr, *irq_jump = nullptr, *exc = nullptr, *code = nullptr,
                  *mie = nullptr;
    uint64_t soc_cycle = 0, rig_cycle = 0, post_until = 0;
    uint64_t seq = 0, written = 0;        // entries made; entries written
    std::vector<RecEntry> ring;
    bool stim = false;
};
static Recorder rec;
static uint64_t REC_PRE = 4096, REC_POST = 10000;

static const void *rec_var(const VerilatedScope *s, const char *name) {
    const VerilatedVar *v = s->varFind(name);
    return v ? v->datap() : nullptr;
}

// Finds the CPU's signals; false (recording off) when the build has no VexRiscv.
static bool rec_open(const char *path) {
    for (const auto &kv : *Verilated::threadContextp()->scopeNameMap()) {
        const VerilatedScope *s = kv.second;
        if (!s->varFind("lastStagePc")) continue;
        rec.pc = (const uint32_t *)rec_var(s, "lastStagePc");
        rec.instr = (const uint32_t *)rec_var(s, "lastStageInstruction");
        rec.firing = (const uint8_t *)rec_var(s, "lastStageIsFiring");
        rec.irq_jump = (const uint8_t *)rec_var(s, "CsrPlugin_interruptJump");
        rec.exc = (const uint8_t *)rec_var(s, "CsrPlugin_hadException");
        rec.code = (const uint8_t *)rec_var(s, "CsrPlugin_interrupt_code");
        // mstatus.MIE is not public: the CPU's model holds it beside lastStagePc.
        const char *cpu = (const char *)rec.pc - offsetof(Vrig_top_VexRiscv, lastStagePc);
        rec.mie = (const uint8_t *)(cpu + offsetof(Vrig_top_VexRiscv, __PVT__CsrPlugin_mstatus_MIE));
        break;
    }
    if (!rec.pc || !rec.instr || !rec.firing || !rec.irq_jump || !rec.exc || !rec.code) {
        fprintf(stderr, "rtrig-sim: --record: the CPU's signals were not found\n");
        return false;
    }
    rec.out = fopen(path, "wb");
    if (!rec.out) { perror("rtrig-sim: --record"); return false; }
    if (const char *e = getenv("RTRIG_SOC_RECORD_PRE")) REC_PRE = strtoull(e, nullptr, 10);
    if (const char *e = getenv("RTRIG_SOC_RECORD_POST")) REC_POST = strtoull(e, nullptr, 10);
    rec.ring.resize(REC_PRE ? REC_PRE : 1);
    return true;
}

static void rec_put(const RecEntry &e) {
    if (rec.soc_cycle < rec.post_until) {
        fwrite(&e, sizeof e, 1, rec.out);
        rec.written = ++rec.seq;
    } else {
        rec.ring[rec.seq++ % rec.ring.size()] = e;
    }
}

// After each SoC rising edge: the instruction that retired, a trap taken.
static inline void rec_soc(void) {
    rec.soc_cycle++;
    if (*rec.irq_jump || *rec.exc)
        rec_put({rec.soc_cycle, 0, *rec.pc,
                 REC_TRAP | (*rec.exc ? REC_EXC : 0u) | (uint32_t)(*rec.code & 15) << 8});
    if (*rec.firing)
        rec_put({rec.soc_cycle, *rec.instr, *rec.pc, *rec.mie ? REC_MIE : 0u});
}

// After each rig rising edge: a STIM0 rising edge flushes the ring and opens a window.
static inline void rec_rig(const Vrig_top &top) {
    rec.rig_cycle++;
    bool stim = top.stim0;
    if (stim && !rec.stim) {
        uint64_t from = rec.seq > REC_PRE ? rec.seq - REC_PRE : 0;
        for (uint64_t i = from > rec.written ? from : rec.written; i < rec.seq; i++)
            fwrite(&rec.ring[i % rec.ring.size()], sizeof(RecEntry), 1, rec.out);
        rec.written = rec.seq;
        RecEntry e{rec.soc_cycle, rec.rig_cycle, 0, REC_EDGE};
        fwrite(&e, sizeof e, 1, rec.out);
        rec.post_until = rec.soc_cycle + REC_POST;
    }
    rec.stim = stim;
}

// Outputs of the SoC are registered in its domain: read once after each rising edge.
static void soc_outputs(Vrig_top &top) {
    if (rec.out) rec_soc();
    if (top.soc_console_valid && soc_console) { fputc(top.soc_console_data, soc_console); fflush(soc_console); }
    if (top.soc_exit_valid && soc_console) { fprintf(soc_console, "\nSIM_EXIT %u\n", top.soc_exit_code); fflush(soc_console); }
    if (top.soc_trace_valid && soc_trace) { fprintf(soc_trace, "%u\n", top.soc_trace_data); fflush(soc_trace); }
}

// The clock edges up to the rig's next rising edge.
static inline void clock_cycle(Vrig_top &top) {
    for (;;) {
        uint64_t t = rig_rise < soc_rise ? rig_rise : soc_rise;
        bool rig_up = t == rig_rise, soc_up = t == soc_rise;
        if ((rig_up && top.clk) || (soc_up && top.soc_clk)) {
            top.clk = 0;          // a clock about to rise again is still high: lower it
            top.soc_clk = 0;      // (and the other with it) at an evaluation of its own
            top.eval();
        }
        top.clk = rig_up;
        top.soc_clk = soc_up;
        top.eval();
        if (soc_up) {
            soc_rise += 2 * RTRIG_SOC_HALF;
            soc_outputs(top);
        }
        if (rig_up) {
            rig_rise += 2 * RTRIG_RIG_HALF;
            return;
        }
    }
}
// Reset: the SoC's clock one edge per rig rising edge (its reset only needs edges).
static void soc_clock(Vrig_top &top) { top.soc_clk = !top.soc_clk; }
static const char *rec_path = nullptr;  // --record PATH (or $RTRIG_SOC_RECORD)
static bool rec_start(void) { return !rec_path || !*rec_path || rec_open(rec_path); }
static inline void rec_cycle(const Vrig_top &top) { if (rec.out) rec_rig(top); }
static void rec_close(void) { if (rec.out) fclose(rec.out); }
#else
static bool soc_load_ram(VerilatedContext &) { return true; }
static void soc_clock(Vrig_top &) {}
static bool rec_start(void) { return true; }
static inline void rec_cycle(const Vrig_top &) {}
static void rec_close(void) {}

// One clock cycle of the rig.
static inline void clock_cycle(Vrig_top &top) {
    top.clk = 0;
    top.eval();
    top.clk = 1;
    top.eval();
}
#endif
static void on_signal(int sig) { stop_requested = 1; stop_signal = sig; }
// The exit status of a run that ended with ``code``: a twin a signal stopped ends by
// that signal once its files are closed, so whoever waits for it sees who stopped it
// (``killed by signal SIGTERM``), not a clean exit.
static int ended(int code) {
    if (stop_signal) {
        signal(stop_signal, SIG_DFL);
        raise(stop_signal);
    }
    return code;
}
// How often the wait for the client looks at the stop flag and at the parent: a signal
// landing between the flag test and poll() is seen this much later.
static const int LISTEN_POLL_MS = 50;

// The external pins in simulation: a wire from STIM0 to ISR_OUT and from STIM1 to
// APP_OUT (the calibration loopback of a real bench), every sample of the clock alike,
// through the RTRIG_PIN_LATENCY registers a board has in front of the Rig's inputs.
// Called once per clock cycle.
static void external_pins(Vrig_top &top) {
    unsigned v = (top.stim0 ? 1 : 0) | (top.stim1 ? 2 : 0);
#if RTRIG_PIN_LATENCY > 0
    static unsigned line[RTRIG_PIN_LATENCY];
    static int head = 0;
    unsigned out = line[head];
    line[head] = v;
    head = (head + 1) % RTRIG_PIN_LATENCY;
    v = out;
#endif
    top.ext_inputs = v;
#ifdef RTRIG_LATER
    uint32_t later = 0;
    for (int j = 0; j < RTRIG_LATER; j++) later |= v << (RTRIG_N_INPUTS * j);
    top.ext_later = later;
#endif
}

// Eight clock edges (four cycles) with the resets the caller set.
static void reset_edges(Vrig_top &top) {
    for (int i = 0; i < 8; i++) {
        top.clk = !top.clk;
        if (top.clk) soc_clock(top);
        top.eval();
    }
}

// The command line (see the usage above); --console and --trace open the SoC's files.
struct Options {
    int divisor = 33, port = 0;
    pid_t parent = 0;
    long long bench = 0;
    uint64_t poll_cycles = 128;  // cycles between two services of the socket: see serve_socket
};

static Options parse_args(int argc, char **argv) {
    Options o;
#ifdef RTRIG_SOC
    rec_path = getenv("RTRIG_SOC_RECORD");
#endif
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--divisor") o.divisor = atoi(argv[i + 1]);
        else if (a == "--port") o.port = atoi(argv[i + 1]);
        else if (a == "--bench") o.bench = atoll(argv[i + 1]);
        else if (a == "--parent") o.parent = (pid_t)atol(argv[i + 1]);
        else if (a == "--poll" && atoll(argv[i + 1]) > 0) o.poll_cycles = atoll(argv[i + 1]);
#ifdef RTRIG_SOC
        else if (a == "--console") soc_console = fopen(argv[i + 1], "w");
        else if (a == "--trace") soc_trace = fopen(argv[i + 1], "w");
        else if (a == "--ram") soc_ram = argv[i + 1];
        else if (a == "--record") rec_path = argv[i + 1];
#endif
    }
    return o;
}

// Speed benchmark (--bench CYCLES): free-running rig, no link traffic.
static int run_bench(long long cycles) {
    VerilatedContext ctx;
    if (!soc_load_ram(ctx)) return 2;
    Vrig_top top(&ctx);
    top.uart_rx = 1;
    top.rst = 0;
#ifdef RTRIG_SOC
    top.soc_rst = 1;
    reset_edges(top);
    top.soc_rst = 0;
#endif
    auto t0 = std::chrono::steady_clock::now();
    if (!rec_start()) return 2;
    for (long long c = 0; c < cycles; c++) {
        external_pins(top);
        clock_cycle(top);
        rec_cycle(top);
    }
    rec_close();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%lld cycles in %.3f s: %.0f cycles/s\n", cycles, s, cycles / s);
    return 0;
}

// SIGTERM and SIGHUP end the twin. Without SA_RESTART a blocking call they interrupt
// returns EINTR instead of resuming (signal() would restart accept() for ever).
static void install_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
}

// Whether the host process that started us (--parent, else our first parent) is gone.
static bool orphaned(pid_t parent) { return parent > 0 ? getppid() != parent : getppid() == 1; }

// Listens on 127.0.0.1:port (0: any free port) and prints the port; -1 on failure.
static int listen_socket(int port) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (bind(ls, (sockaddr *)&addr, sizeof addr) || listen(ls, 1)) {
        perror("rtrig-sim: bind/listen");
        return -1;
    }
    socklen_t alen = sizeof addr;
    getsockname(ls, (sockaddr *)&addr, &alen);
    printf("RTRIG-SIM LISTENING %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    return ls;
}

// Waits for the client with poll() and a timeout, so a stop request or the parent's
// death is seen however it arrives. Closes ls; returns the client's socket
// (non-blocking, no Nagle delay) or -1.
static int wait_for_client(int ls, pid_t parent) {
    fcntl(ls, F_SETFL, O_NONBLOCK);
    int cs = -1;
    while (!stop_requested && !orphaned(parent)) {
        pollfd pfd{ls, POLLIN, 0};
        int r = poll(&pfd, 1, LISTEN_POLL_MS);
        if (r < 0 && errno != EINTR) break;
        if (r > 0) {
            cs = accept(ls, nullptr, nullptr);
            if (cs >= 0) break;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED) break;
        }
    }
    close(ls);
    if (cs < 0) return -1;
    int one = 1;
    setsockopt(cs, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(cs, F_SETFL, O_NONBLOCK);
    return cs;
}

// The rig out of reset: four cycles with rst (and the SoC's soc_rst) high.
static void reset_rig(Vrig_top &top) {
    top.clk = 0;
    top.rst = 1;
    top.uart_rx = 1;
    top.ext_inputs = 0;
#ifdef RTRIG_SOC
    top.soc_clk = 0;
    top.soc_rst = 1;
#endif
    reset_edges(top);
    top.rst = 0;
#ifdef RTRIG_SOC
    top.soc_rst = 0;
#endif
}

// The UART between the socket and the rig's pins, one bit every `divisor` cycles.
struct UartBridge {
    int divisor;
    std::deque<uint8_t> to_rig;      // bytes waiting to be shifted into uart_rx
    std::vector<uint8_t> to_host;    // bytes shifted out of uart_tx
    int rx_bit = -1, rx_timer = 0;   // host → rig shifter (-1 idle)
    uint16_t rx_frame = 0;
    int tx_bit = -1, tx_timer = 0;   // rig → host sampler
    uint8_t tx_byte = 0;

    explicit UartBridge(int bit_cycles) : divisor(bit_cycles) {}

    // Host → rig: drive uart_rx for this cycle.
    void drive_rx(Vrig_top &top) {
        if (rx_bit < 0 && !to_rig.empty()) {
            rx_frame = (uint16_t)(0x200 | (to_rig.front() << 1));  // start 0, data, stop 1
            to_rig.pop_front();
            rx_bit = 0;
            rx_timer = divisor;
        }
        if (rx_bit >= 0) {
            top.uart_rx = (rx_frame >> rx_bit) & 1;
            if (--rx_timer == 0) {
                rx_timer = divisor;
                if (++rx_bit == 10) rx_bit = -1;
            }
        } else {
            top.uart_rx = 1;
        }
    }

    // Rig → host: sample uart_tx in the middle of each bit.
    void sample_tx(const Vrig_top &top) {
        if (tx_bit < 0) {
            if (!top.uart_tx) { tx_bit = 0; tx_timer = divisor + divisor / 2; tx_byte = 0; }
        } else if (--tx_timer == 0) {
            if (tx_bit < 8) {
                tx_byte |= (uint8_t)(top.uart_tx ? 1 : 0) << tx_bit;
                tx_bit++;
                tx_timer = divisor;
            } else {
                to_host.push_back(tx_byte);  // stop bit position reached
                tx_bit = -1;
            }
        }
    }
};

// Sends the bytes the rig sent and takes in what the host sent. False once the link
// is closed or broken (a failed send also sets stop_requested).
static bool serve_socket(int cs, UartBridge &uart) {
    static uint8_t inbuf[4096];
    if (!uart.to_host.empty()) {
        size_t off = 0;
        while (off < uart.to_host.size()) {
            ssize_t n = send(cs, uart.to_host.data() + off, uart.to_host.size() - off, 0);
            if (n > 0) { off += n; continue; }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !stop_requested) {
                usleep(100);
                continue;
            }
            stop_requested = 1;
            break;
        }
        uart.to_host.clear();
    }
    if (uart.to_rig.size() < 4096) {
        ssize_t n = recv(cs, inbuf, sizeof inbuf, 0);
        if (n > 0) uart.to_rig.insert(uart.to_rig.end(), inbuf, inbuf + n);
        else if (n == 0) return false;  // host closed the link
        else if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    }
    return true;
}

// The twin's run: one rig cycle at a time, the UART bridged to the client, until the
// client disconnects or a stop is requested.
static void run(Vrig_top &top, int cs, const Options &o) {
    UartBridge uart(o.divisor);
    uint64_t until_poll = 1;
    while (!stop_requested) {
        uart.drive_rx(top);
        external_pins(top);
        clock_cycle(top);
        rec_cycle(top);
        uart.sample_tx(top);
        // The socket is served every poll_cycles cycles (128 by default): a register round
        // trip on the fast twin takes ~1.05 ms at 128 and ~1.78 ms at 1024 on an idle
        // machine (bench_sim.py); 16 gains nothing more (the simulated bytes take ~900
        // cycles), and the two system calls cost ~1 % of the simulation at 128.
        if (--until_poll == 0) {
            until_poll = o.poll_cycles;
            if (!serve_socket(cs, uart)) break;
        }
    }
}

// The end of the run: the model's final(), the SoC's files and the client's socket closed.
static void finish(Vrig_top &top, int cs) {
    top.final();
#ifdef RTRIG_SOC
    if (soc_trace) fclose(soc_trace);
    if (soc_console) fclose(soc_console);
#endif
    rec_close();
    close(cs);
}

int main(int argc, char **argv) {
    Options o = parse_args(argc, argv);
    if (o.bench > 0) return run_bench(o.bench);
    install_signals();
    // Never outlive the host process that started us (no stray simulators): the kernel
    // sends SIGTERM when it dies. It may have died before this call: then we have a new
    // parent already, and leave.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (orphaned(o.parent)) return 0;

    int ls = listen_socket(o.port);
    if (ls < 0) return 2;
    int cs = wait_for_client(ls, o.parent);
    if (cs < 0) return ended((stop_requested || orphaned(o.parent)) ? 0 : 2);

    VerilatedContext ctx;
    if (!soc_load_ram(ctx)) return 2;
    Vrig_top top(&ctx);
    if (!rec_start()) return 2;
    reset_rig(top);
    run(top, cs, o);
    finish(top, cs);
    return ended(0);
}
