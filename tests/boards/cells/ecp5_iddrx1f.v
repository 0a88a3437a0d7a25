// SPDX-License-Identifier: BSD-2-Clause
//
// IDDRX1F: the ECP5 generic x1 DDR input register, a simulation model written from
// Lattice's description of the primitive in "ECP5 and ECP5-5G High-Speed I/O
// Interface", technical note FPGA-TN-02035 (formerly TN1265): the IDDRX1F primitive of
// its "DDR Software Primitives" section, as used by the generic receive interfaces
// GDDRX1_RX.SCLK.Aligned / .Centered (x1 gearing, SCLK only).
//
// What the note describes, and this model does:
//   * D is captured on both edges of SCLK: once at the rising edge, once at the
//     falling edge that follows it.
//   * The two captures are handed to the fabric together, re-timed to SCLK's rising
//     edge: at each rising edge Q0 takes the rising-edge capture of the previous
//     SCLK cycle (the earlier sample in time) and Q1 the falling-edge capture made
//     half a cycle later, in the middle of that cycle. Both outputs change only at
//     rising edges of SCLK, so the fabric reads a pair one SCLK cycle after its
//     first sample was taken.
//   * RST (asynchronous, active high) clears the capture and output registers.
//
// This file is kept apart from the gateware on purpose: it says what the silicon
// does, and the gateware is checked against it, never the other way round.
// yosys ships this primitive as a black box only (ecp5/cells_bb.v).

`timescale 1ns / 1ps

module IDDRX1F (input D, input SCLK, input RST, output reg Q0, output reg Q1);
    reg rise_capture = 1'b0;    // D at the last rising edge of SCLK
    reg fall_capture = 1'b0;    // D at the last falling edge of SCLK
    initial begin
        Q0 = 1'b0;
        Q1 = 1'b0;
    end
    always @(posedge SCLK or posedge RST)
        if (RST) begin
            rise_capture <= 1'b0;
            Q0 <= 1'b0;
            Q1 <= 1'b0;
        end else begin
            rise_capture <= D;
            Q0 <= rise_capture;
            Q1 <= fall_capture;
        end
    always @(negedge SCLK or posedge RST)
        if (RST)
            fall_capture <= 1'b0;
        else
            fall_capture <= D;
endmodule
