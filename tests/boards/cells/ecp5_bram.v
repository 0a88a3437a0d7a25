// SPDX-License-Identifier: BSD-2-Clause
//
// Simulation models of the ECP5 cells the rig's netlist holds that yosys ships as
// black boxes only (ecp5/cells_sim.v, ecp5/cells_bb.v), written for the ways yosys'
// ECP5 mapping uses them (its brams_map_16kd.v): block RAM, clock buffer, multiplier.
//
// DP16KD (sysMEM block RAM; Lattice FPGA-TN-02204, "ECP5 and ECP5-5G Memory Usage
// Guide"): the configurations yosys makes, with equal port widths, chip selects tied
// off, no output register (REGMODE "NOREG") and synchronous reset:
//   * width 36 (pseudo dual port): port A writes {DIB, DIA} at address ADA13..5 with
//     byte enables ADA3..0, port B reads {DOB, DOA} at ADB13..5;
//   * width 18: each port reads and writes 18 bits at ADx13..4, byte enables ADx1..0;
//   * widths 9, 4, 2, 1: ADx13..3, ..2, ..1, ..0.
// A port reads at its clock edge when CEx is high (REGMODE "NOREG": the read data is
// at DOx after that edge); a write on a port leaves that port's output as it was
// (WRITEMODE "NORMAL"), or shows the data written ("WRITETHROUGH"), or the data it
// replaced ("READBEFOREWRITE"). A read of the word the other port writes at the same
// edge returns the old word: the rig's FIFOs never do it.

`timescale 1ns / 1ps

module DP16KD (
    input DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
    input ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input CEA, OCEA, CLKA, WEA, RSTA,
    input CSA2, CSA1, CSA0,
    output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
    input DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
    input ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input CEB, OCEB, CLKB, WEB, RSTB,
    input CSB2, CSB1, CSB0,
    output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter RESETMODE = "SYNC";
    parameter ASYNC_RESET_RELEASE = "SYNC";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter GSR = "ENABLED";
    parameter CLKAMUX = "CLKA";
    parameter CLKBMUX = "CLKB";
    // The initial contents (the rig's FIFOs start empty; nothing reads them before a
    // write): accepted, not loaded.
    parameter INITVAL_00 = 320'h0;
    parameter INITVAL_01 = 320'h0;
    parameter INITVAL_02 = 320'h0;
    parameter INITVAL_03 = 320'h0;
    parameter INITVAL_04 = 320'h0;
    parameter INITVAL_05 = 320'h0;
    parameter INITVAL_06 = 320'h0;
    parameter INITVAL_07 = 320'h0;
    parameter INITVAL_08 = 320'h0;
    parameter INITVAL_09 = 320'h0;
    parameter INITVAL_0A = 320'h0;
    parameter INITVAL_0B = 320'h0;
    parameter INITVAL_0C = 320'h0;
    parameter INITVAL_0D = 320'h0;
    parameter INITVAL_0E = 320'h0;
    parameter INITVAL_0F = 320'h0;
    parameter INITVAL_10 = 320'h0;
    parameter INITVAL_11 = 320'h0;
    parameter INITVAL_12 = 320'h0;
    parameter INITVAL_13 = 320'h0;
    parameter INITVAL_14 = 320'h0;
    parameter INITVAL_15 = 320'h0;
    parameter INITVAL_16 = 320'h0;
    parameter INITVAL_17 = 320'h0;
    parameter INITVAL_18 = 320'h0;
    parameter INITVAL_19 = 320'h0;
    parameter INITVAL_1A = 320'h0;
    parameter INITVAL_1B = 320'h0;
    parameter INITVAL_1C = 320'h0;
    parameter INITVAL_1D = 320'h0;
    parameter INITVAL_1E = 320'h0;
    parameter INITVAL_1F = 320'h0;
    parameter INITVAL_20 = 320'h0;
    parameter INITVAL_21 = 320'h0;
    parameter INITVAL_22 = 320'h0;
    parameter INITVAL_23 = 320'h0;
    parameter INITVAL_24 = 320'h0;
    parameter INITVAL_25 = 320'h0;
    parameter INITVAL_26 = 320'h0;
    parameter INITVAL_27 = 320'h0;
    parameter INITVAL_28 = 320'h0;
    parameter INITVAL_29 = 320'h0;
    parameter INITVAL_2A = 320'h0;
    parameter INITVAL_2B = 320'h0;
    parameter INITVAL_2C = 320'h0;
    parameter INITVAL_2D = 320'h0;
    parameter INITVAL_2E = 320'h0;
    parameter INITVAL_2F = 320'h0;
    parameter INITVAL_30 = 320'h0;
    parameter INITVAL_31 = 320'h0;
    parameter INITVAL_32 = 320'h0;
    parameter INITVAL_33 = 320'h0;
    parameter INITVAL_34 = 320'h0;
    parameter INITVAL_35 = 320'h0;
    parameter INITVAL_36 = 320'h0;
    parameter INITVAL_37 = 320'h0;
    parameter INITVAL_38 = 320'h0;
    parameter INITVAL_39 = 320'h0;
    parameter INITVAL_3A = 320'h0;
    parameter INITVAL_3B = 320'h0;
    parameter INITVAL_3C = 320'h0;
    parameter INITVAL_3D = 320'h0;
    parameter INITVAL_3E = 320'h0;
    parameter INITVAL_3F = 320'h0;

    localparam W = DATA_WIDTH_A;
    localparam WIDE = (W == 36);
    // Address bits below the word address, per width.
    localparam LOW = W == 36 ? 5 : W == 18 ? 4 : W == 9 ? 3 : W == 4 ? 2 : W == 2 ? 1 : 0;
    localparam WORDS = 16384 >> LOW;
    localparam MW = W == 36 ? 36 : W == 18 ? 18 : W;

    initial begin
        if (DATA_WIDTH_A != DATA_WIDTH_B || REGMODE_A != "NOREG" || REGMODE_B != "NOREG"
            || CLKAMUX != "CLKA" || CLKBMUX != "CLKB") begin
            $display("DP16KD model: configuration not modelled (%m)");
            $finish(2);
        end
    end

    wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
    wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
    wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};

    reg [MW-1:0] mem [0:WORDS-1];
    reg [17:0] doa = 18'd0, dob = 18'd0;
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = doa;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = dob;

    integer i;
    initial for (i = 0; i < WORDS; i = i + 1) mem[i] = {MW{1'b0}};

    // Byte enables of a write: ADx3..0 at width 36, ADx1..0 at 18, none below.
    function [35:0] bit_mask(input [13:0] ad);
        integer b;
        begin
            bit_mask = {36{1'b1}};
            if (W == 36)
                for (b = 0; b < 4; b = b + 1) bit_mask[9 * b +: 9] = {9{ad[b]}};
            else if (W == 18)
                for (b = 0; b < 2; b = b + 1) bit_mask[9 * b +: 9] = {9{ad[b]}};
        end
    endfunction

    wire [MW-1:0] wdata_a = WIDE ? {dib, dia} : dia[MW-1:0];
    reg [MW-1:0] old_a, old_b;

    always @(posedge CLKA) begin
        if (CEA) begin
            old_a = mem[ada >> LOW];
            if (WEA)
                mem[ada >> LOW] <= (old_a & ~bit_mask(ada)) | (wdata_a & bit_mask(ada));
            if (!WIDE) begin
                if (RSTA)
                    doa <= 18'd0;
                else if (!WEA || WRITEMODE_A == "READBEFOREWRITE")
                    doa <= old_a;
                else if (WRITEMODE_A == "WRITETHROUGH")
                    doa <= (old_a & ~bit_mask(ada)) | (wdata_a & bit_mask(ada));
            end
        end
    end

    always @(posedge CLKB) begin
        if (CEB) begin
            old_b = mem[adb >> LOW];
            if (WIDE) begin
                // Port B reads the 36 bits: DOA the low half, DOB the high half.
                if (RSTB)
                    {dob, doa} <= 36'd0;
                else
                    {dob, doa} <= old_b;
            end else begin
                if (WEB)
                    mem[adb >> LOW] <= (old_b & ~bit_mask(adb)) | (dib[MW-1:0] & bit_mask(adb));
                if (RSTB)
                    dob <= 18'd0;
                else if (!WEB || WRITEMODE_B == "READBEFOREWRITE")
                    dob <= old_b;
                else if (WRITEMODE_B == "WRITETHROUGH")
                    dob <= (old_b & ~bit_mask(adb)) | (dib[MW-1:0] & bit_mask(adb));
            end
        end
    end
endmodule

// DCCA: a primary clock buffer with a glitch-free enable (Lattice FPGA-TN-02200,
// "ECP5 and ECP5-5G sysCLOCK PLL/DLL Design and User Guide"): the enable is taken
// while the clock is low, so the output never shows a partial pulse.
module DCCA (input CLKI, input CE, output CLKO);
    reg en = 1'b0;
    always @(CLKI or CE) if (!CLKI) en <= CE;
    assign CLKO = CLKI & en;
endmodule

// MULT18X18D: the on-chip statistics' multipliers. Nothing this simulation checks
// reads the statistics (raw events only), so the multiplier is left without a
// product: it outputs zeros.
module MULT18X18D (
    input A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0,
    input B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0,
    input C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0,
    input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
    input CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0, RST3, RST2, RST1, RST0,
    input SRIA17, SRIA16, SRIA15, SRIA14, SRIA13, SRIA12, SRIA11, SRIA10, SRIA9, SRIA8, SRIA7, SRIA6, SRIA5, SRIA4, SRIA3, SRIA2, SRIA1, SRIA0,
    input SRIB17, SRIB16, SRIB15, SRIB14, SRIB13, SRIB12, SRIB11, SRIB10, SRIB9, SRIB8, SRIB7, SRIB6, SRIB5, SRIB4, SRIB3, SRIB2, SRIB1, SRIB0,
    output SROA17, SROA16, SROA15, SROA14, SROA13, SROA12, SROA11, SROA10, SROA9, SROA8, SROA7, SROA6, SROA5, SROA4, SROA3, SROA2, SROA1, SROA0,
    output SROB17, SROB16, SROB15, SROB14, SROB13, SROB12, SROB11, SROB10, SROB9, SROB8, SROB7, SROB6, SROB5, SROB4, SROB3, SROB2, SROB1, SROB0,
    output ROA17, ROA16, ROA15, ROA14, ROA13, ROA12, ROA11, ROA10, ROA9, ROA8, ROA7, ROA6, ROA5, ROA4, ROA3, ROA2, ROA1, ROA0,
    output ROB17, ROB16, ROB15, ROB14, ROB13, ROB12, ROB11, ROB10, ROB9, ROB8, ROB7, ROB6, ROB5, ROB4, ROB3, ROB2, ROB1, ROB0,
    output ROC17, ROC16, ROC15, ROC14, ROC13, ROC12, ROC11, ROC10, ROC9, ROC8, ROC7, ROC6, ROC5, ROC4, ROC3, ROC2, ROC1, ROC0,
    output P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0,
    output SIGNEDP
);
    assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
            P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = 36'd0;
    assign SIGNEDP = 1'b0;
endmodule
