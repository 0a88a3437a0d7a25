/* SPDX-License-Identifier: BSD-2-Clause */
/* ARMv7-M reset and fault entry shared by every Cortex-M board. */
#include "cortexm.h"
#include "kernel.h"

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
int main(void);

void Reset_Handler(void)
{
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;)
        *d++ = *s++;
    for (uint32_t *d = __bss_start; d < __bss_end;)
        *d++ = 0;
    (void)main();
    for (;;)
        ;
}

void Fault_Handler(void)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    k_panic(K_ERR_BAD_EXCEPTION, ipsr);
}
