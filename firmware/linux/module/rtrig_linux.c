// SPDX-License-Identifier: BSD-2-Clause
/*
 * rtrig_linux: the rtrig target module for Linux.
 *
 * The rig drives STIM0 into a GPIO of the target and timestamps the target's
 * answers from outside. This module answers in the kernel:
 *   hard handler (primary): t = ktime_get_ns(); ISR_OUT high; ISR_OUT low;
 *                           wake the thread
 *   threaded handler (IST): MARKER0 high; publish {t, seq}, wake readers;
 *                           MARKER0 low
 * so per stimulus the pins go ISR_OUT up, down, MARKER0 up, down, and each is
 * low again before the next stimulus. The program rtrig-linux reads
 * /dev/rtrig and answers on APP_OUT.
 *
 * Usage:
 *   insmod rtrig_linux.ko chip=LABEL stim=N isr_out=N [marker0=N]
 *     chip     label of the GPIO chip (required), e.g. chip=rtrig-vgpio
 *     stim     offset of STIM0 on that chip (required; needs an IRQ)
 *     isr_out  offset of ISR_OUT (required)
 *     marker0  offset of MARKER0, -1 (default) for none
 *
 * /dev/rtrig: read() blocks until a stimulus newer than the reader's last one
 * (at open: the newest so far) and returns
 *   struct { __u64 t_irq_ns; __u32 seq; __u32 missed; }
 * t_irq_ns: ktime_get_ns() (CLOCK_MONOTONIC) in the primary handler, seq: the
 * stimulus count since load (the first is 1), missed: stimuli this reader
 * skipped since its last read. O_NONBLOCK gives -EAGAIN; poll() supported.
 *
 * If ISR_OUT's chip may sleep, ISR_OUT moves to the thread (said at load).
 * On PREEMPT_RT the primary handler is force-threaded: that is the RT model,
 * and it is said at load too.
 */

#include <linux/fs.h>
#include <linux/gpio/consumer.h>
#include <linux/gpio/driver.h>
#include <linux/gpio/machine.h>
#include <linux/interrupt.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/wait.h>

#define RT_NAME "rtrig"

static char *chip;
module_param(chip, charp, 0444);
MODULE_PARM_DESC(chip, "label of the GPIO chip (required)");
static int stim = -1;
module_param(stim, int, 0444);
MODULE_PARM_DESC(stim, "offset of STIM0 on the chip (required)");
static int isr_out = -1;
module_param(isr_out, int, 0444);
MODULE_PARM_DESC(isr_out, "offset of ISR_OUT on the chip (required)");
static int marker0 = -1;
module_param(marker0, int, 0444);
MODULE_PARM_DESC(marker0, "offset of MARKER0 on the chip, -1 for none (default)");

struct rt_event {
	__u64 t_irq_ns;
	__u32 seq;
	__u32 missed;
};

static struct {
	struct gpio_desc *stim, *isr, *marker; /* marker NULL: none */
	bool isr_in_thread;
	int irq;

	raw_spinlock_t lock; /* the two below; taken in the primary handler */
	u64 hard_t; /* written by the primary handler */
	u32 hard_seq;
	u64 pub_t; /* published by the thread */
	u32 pub_seq;
	wait_queue_head_t readq;
} rt;

struct rt_reader {
	struct mutex lock; /* last */
	u32 last;
};

/* ------------------------------------------------------------ handlers */

static irqreturn_t rt_hard(int irq, void *data)
{
	u64 t = ktime_get_ns();
	unsigned long flags;

	/* irqsave: on PREEMPT_RT this runs force-threaded with interrupts on */
	raw_spin_lock_irqsave(&rt.lock, flags);
	rt.hard_t = t;
	rt.hard_seq++;
	raw_spin_unlock_irqrestore(&rt.lock, flags);
	if (!rt.isr_in_thread) {
		gpiod_set_value(rt.isr, 1);
		gpiod_set_value(rt.isr, 0);
	}
	return IRQ_WAKE_THREAD;
}

static irqreturn_t rt_thread(int irq, void *data)
{
	if (rt.isr_in_thread) {
		gpiod_set_value_cansleep(rt.isr, 1);
		gpiod_set_value_cansleep(rt.isr, 0);
	}
	if (rt.marker)
		gpiod_set_value_cansleep(rt.marker, 1);
	raw_spin_lock_irq(&rt.lock);
	rt.pub_t = rt.hard_t;
	rt.pub_seq = rt.hard_seq;
	raw_spin_unlock_irq(&rt.lock);
	wake_up_interruptible(&rt.readq);
	if (rt.marker)
		gpiod_set_value_cansleep(rt.marker, 0);
	return IRQ_HANDLED;
}

/* ------------------------------------------------------------ /dev/rtrig */

static u32 rt_pub_seq(void)
{
	return READ_ONCE(rt.pub_seq);
}

static int rt_open(struct inode *inode, struct file *file)
{
	struct rt_reader *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return -ENOMEM;
	mutex_init(&r->lock);
	r->last = rt_pub_seq();
	file->private_data = r;
	return stream_open(inode, file);
}

static int rt_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static ssize_t rt_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct rt_reader *r = file->private_data;
	struct rt_event ev;
	int ret;

	if (count < sizeof(ev))
		return -EINVAL;
	if (mutex_lock_interruptible(&r->lock))
		return -ERESTARTSYS;
	while (rt_pub_seq() == r->last) {
		if (file->f_flags & O_NONBLOCK) {
			ret = -EAGAIN;
			goto out;
		}
		mutex_unlock(&r->lock);
		ret = wait_event_interruptible(rt.readq, rt_pub_seq() != r->last);
		if (ret)
			return ret;
		if (mutex_lock_interruptible(&r->lock))
			return -ERESTARTSYS;
	}
	raw_spin_lock_irq(&rt.lock);
	ev.t_irq_ns = rt.pub_t;
	ev.seq = rt.pub_seq;
	raw_spin_unlock_irq(&rt.lock);
	ev.missed = ev.seq - r->last - 1;
	if (copy_to_user(buf, &ev, sizeof(ev))) {
		ret = -EFAULT;
		goto out;
	}
	r->last = ev.seq;
	ret = sizeof(ev);
out:
	mutex_unlock(&r->lock);
	return ret;
}

static __poll_t rt_poll(struct file *file, poll_table *wait)
{
	struct rt_reader *r = file->private_data;

	poll_wait(file, &rt.readq, wait);
	return rt_pub_seq() != READ_ONCE(r->last) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations rt_fops = {
	.owner = THIS_MODULE,
	.open = rt_open,
	.release = rt_release,
	.read = rt_read,
	.poll = rt_poll,
	/* no .llseek: stream_open() makes every seek -ESPIPE (no_llseek went in 6.12) */
};

static struct miscdevice rt_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = RT_NAME,
	.fops = &rt_fops,
	.mode = 0444,
};

/* ------------------------------------------------------------ load, unload */

/*
 * The lines are requested as a consumer through a lookup table for the misc
 * device (the descriptor API of every kernel line since 4.x), so gpiolib holds
 * the chip's module while they are ours. Only finding the chip by its label,
 * to say in one line what is wrong before asking gpiolib, differs by version.
 */
static struct gpiod_lookup_table rt_lookup = {
	.dev_id = RT_NAME,
	.table = {
		GPIO_LOOKUP(NULL, 0, "rtrig-stim", GPIO_ACTIVE_HIGH),
		GPIO_LOOKUP(NULL, 0, "rtrig-isr-out", GPIO_ACTIVE_HIGH),
		GPIO_LOOKUP(NULL, 0, "rtrig-marker0", GPIO_ACTIVE_HIGH),
		{},
	},
};

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
/* 6.7 removed gpiochip_find(); gpio_device_find_by_label() took its place. */
static int rt_chip_lines(void)
{
	struct gpio_device *gdev = gpio_device_find_by_label(chip);
	struct gpio_chip *gc;
	int n;

	if (!gdev)
		return -ENODEV;
	gc = gpio_device_get_chip(gdev);
	n = gc ? gc->ngpio : -ENODEV;
	gpio_device_put(gdev);
	return n;
}
#else
static int rt_match_label(struct gpio_chip *gc, void *data)
{
	return gc->label && !strcmp(gc->label, data);
}

static int rt_chip_lines(void)
{
	struct gpio_chip *gc = gpiochip_find(chip, rt_match_label);

	return gc ? gc->ngpio : -ENODEV;
}
#endif

/* Range-checks offset and points lookup entry i at it. */
static int rt_line(int i, const char *what, int offset, int lines)
{
	if (offset < 0 || offset >= lines) {
		pr_err(RT_NAME ": %s=%d is not a line of chip %s (0..%d)\n", what, offset, chip,
		       lines - 1);
		return -EINVAL;
	}
	rt_lookup.table[i].key = chip;
	rt_lookup.table[i].chip_hwnum = offset;
	return 0;
}

static struct gpio_desc *rt_get(const char *con_id, enum gpiod_flags flags)
{
	struct gpio_desc *desc = gpiod_get(rt_misc.this_device, con_id, flags);

	if (IS_ERR(desc))
		pr_err(RT_NAME ": cannot request %s on %s: %ld\n", con_id, chip, PTR_ERR(desc));
	return desc;
}

static int rt_check_params(void)
{
	int lines, ret;

	if (!chip || !*chip) {
		pr_err(RT_NAME ": parameter chip= (GPIO chip label) is required\n");
		return -EINVAL;
	}
	if (stim < 0 || isr_out < 0) {
		pr_err(RT_NAME ": parameters stim= and isr_out= (line offsets) are required\n");
		return -EINVAL;
	}
	lines = rt_chip_lines();
	if (lines < 0) {
		pr_err(RT_NAME ": no GPIO chip labelled '%s'\n", chip);
		return lines;
	}
	ret = rt_line(0, "stim", stim, lines);
	if (!ret)
		ret = rt_line(1, "isr_out", isr_out, lines);
	if (!ret && marker0 >= 0)
		ret = rt_line(2, "marker0", marker0, lines);
	return ret;
}

/* The three lines and STIM0's IRQ; on error, nothing is left requested. */
static int rt_request_lines(void)
{
	struct gpio_desc *stim_desc;
	int ret;

	stim_desc = rt_get("rtrig-stim", GPIOD_IN);
	if (IS_ERR(stim_desc))
		return PTR_ERR(stim_desc);
	rt.isr = rt_get("rtrig-isr-out", GPIOD_OUT_LOW);
	if (IS_ERR(rt.isr)) {
		ret = PTR_ERR(rt.isr);
		goto err_stim;
	}
	rt.marker = NULL;
	if (marker0 >= 0) {
		rt.marker = rt_get("rtrig-marker0", GPIOD_OUT_LOW);
		if (IS_ERR(rt.marker)) {
			ret = PTR_ERR(rt.marker);
			goto err_isr;
		}
	}
	rt.irq = gpiod_to_irq(stim_desc);
	if (rt.irq <= 0) {
		pr_err(RT_NAME ": stim=%d of chip %s has no IRQ (%d)\n", stim, chip, rt.irq);
		ret = -ENODEV;
		goto err_marker;
	}
	rt.stim = stim_desc;
	return 0;

err_marker:
	if (rt.marker)
		gpiod_put(rt.marker);
err_isr:
	gpiod_put(rt.isr);
err_stim:
	gpiod_put(stim_desc);
	return ret;
}

static void rt_free_lines(void)
{
	gpiod_set_value_cansleep(rt.isr, 0);
	if (rt.marker) {
		gpiod_set_value_cansleep(rt.marker, 0);
		gpiod_put(rt.marker);
	}
	gpiod_put(rt.isr);
	gpiod_put(rt.stim);
}

static int __init rt_init(void)
{
	int ret;

	raw_spin_lock_init(&rt.lock);
	init_waitqueue_head(&rt.readq);
	ret = rt_check_params();
	if (ret)
		return ret;

	/* The misc device is the lines' consumer: registered first, found by name. */
	ret = misc_register(&rt_misc);
	if (ret) {
		pr_err(RT_NAME ": cannot register /dev/" RT_NAME ": %d\n", ret);
		return ret;
	}
	gpiod_add_lookup_table(&rt_lookup);
	ret = rt_request_lines();
	if (ret)
		goto err_misc;

	rt.isr_in_thread = gpiod_cansleep(rt.isr);
	ret = request_threaded_irq(rt.irq, rt_hard, rt_thread, IRQF_TRIGGER_RISING | IRQF_ONESHOT,
				   RT_NAME, &rt);
	if (ret) {
		pr_err(RT_NAME ": cannot request IRQ %d of stim=%d on %s: %d\n", rt.irq, stim, chip,
		       ret);
		goto err_lines;
	}

	pr_info(RT_NAME ": chip %s stim=%d (IRQ %d) isr_out=%d marker0=%d, /dev/" RT_NAME "\n",
		chip, stim, rt.irq, isr_out, marker0);
	if (rt.isr_in_thread)
		pr_info(RT_NAME ": isr_out's chip may sleep: ISR_OUT is driven from the thread\n");
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		pr_info(RT_NAME ": PREEMPT_RT: the primary handler is force-threaded (the RT model)\n");
	return 0;

err_lines:
	rt_free_lines();
err_misc:
	gpiod_remove_lookup_table(&rt_lookup);
	misc_deregister(&rt_misc);
	return ret;
}

static void __exit rt_exit(void)
{
	free_irq(rt.irq, &rt); /* waits for both handlers */
	rt_free_lines();
	gpiod_remove_lookup_table(&rt_lookup);
	/* No reader remains: an open /dev/rtrig holds this module. */
	misc_deregister(&rt_misc);
}

module_init(rt_init);
module_exit(rt_exit);

MODULE_DESCRIPTION("rtrig target: GPIO interrupt answered on ISR_OUT, MARKER0 and /dev/rtrig");
MODULE_LICENSE("Dual BSD/GPL");
