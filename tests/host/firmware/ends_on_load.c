/* SPDX-License-Identifier: BSD-2-Clause
 * A broken firmware for tests/host/test_own_firmware.py: it never answers the
 * stimulus (no interrupt enabled, ISR_OUT and APP_OUT stay low) and, once the rig
 * raises LOAD_EN, prints a line and ends with SIM_EXIT 66. Without --load it is a
 * silent firmware, with --load an exiting one: one image, one twin build.
 */
#include <stdint.h>

#define REG(addr)  (*(volatile uint32_t *)(addr))
#define GPIO_IN    REG(0x8000000Cu)
#define CONSOLE_TX REG(0x80003000u)
#define SIM_EXIT   REG(0x80003004u)

__attribute__((naked, section(".text.start"))) void _start(void)
{
    __asm__ volatile("la sp, __stack_top\n"
                     "j main\n");
}

static void puts_console(const char *s)
{
    while (*s)
        CONSOLE_TX = (uint8_t)*s++;
}

int main(void)
{
    puts_console("broken: ready\n");
    while (!(GPIO_IN & 1u))
        ;
    puts_console("broken: LOAD_EN seen, giving up\n");
    SIM_EXIT = 66;
    for (;;)
        ;
}
