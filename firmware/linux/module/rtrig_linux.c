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
#include <linux/gpio.h>
#include <linux/gpio/consumer.h>
#include <linux/gpio/driver.h>
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
	unsigned int stim_gpio, isr_gpio, marker_gpio;
	struct gpio_desc *isr, *marker; /* marker NULL: none */
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
	.llseek = no_llseek,
};

static struct miscdevice rt_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = RT_NAME,
	.fops = &rt_fops,
	.mode = 0444,
};

/* ------------------------------------------------------------ load, unload */

static int rt_match_label(struct gpio_chip *gc, void *data)
{
	return gc->label && !strcmp(gc->label, data);
}

/* The global number of the chip's line at offset, after a range check. */
static int rt_line(struct gpio_chip *gc, const char *what, int offset, unsigned int *gpio)
{
	if (offset < 0 || offset >= gc->ngpio) {
		pr_err(RT_NAME ": %s=%d is not a line of chip %s (0..%u)\n", what, offset,
		       chip, gc->ngpio - 1);
		return -EINVAL;
	}
	*gpio = gc->base + offset;
	return 0;
}

static int rt_request(unsigned int gpio, unsigned long flags, const char *what)
{
	int ret = gpio_request_one(gpio, flags, what);

	if (ret)
		pr_err(RT_NAME ": cannot request %s (GPIO %u on %s): %d\n", what, gpio, chip, ret);
	return ret;
}

static int __init rt_init(void)
{
	struct gpio_chip *gc;
	int ret;

	raw_spin_lock_init(&rt.lock);
	init_waitqueue_head(&rt.readq);

	if (!chip || !*chip) {
		pr_err(RT_NAME ": parameter chip= (GPIO chip label) is required\n");
		return -EINVAL;
	}
	if (stim < 0 || isr_out < 0) {
		pr_err(RT_NAME ": parameters stim= and isr_out= (line offsets) are required\n");
		return -EINVAL;
	}
	gc = gpiochip_find(chip, rt_match_label);
	if (!gc) {
		pr_err(RT_NAME ": no GPIO chip labelled '%s'\n", chip);
		return -ENODEV;
	}
	ret = rt_line(gc, "stim", stim, &rt.stim_gpio);
	if (!ret)
		ret = rt_line(gc, "isr_out", isr_out, &rt.isr_gpio);
	if (!ret && marker0 >= 0)
		ret = rt_line(gc, "marker0", marker0, &rt.marker_gpio);
	if (ret)
		return ret;

	/* gpiolib holds the chip's module while a line is requested */
	ret = rt_request(rt.stim_gpio, GPIOF_IN, "rtrig-stim");
	if (ret)
		return ret;
	ret = rt_request(rt.isr_gpio, GPIOF_OUT_INIT_LOW, "rtrig-isr-out");
	if (ret)
		goto err_stim;
	rt.isr = gpio_to_desc(rt.isr_gpio);
	if (marker0 >= 0) {
		ret = rt_request(rt.marker_gpio, GPIOF_OUT_INIT_LOW, "rtrig-marker0");
		if (ret)
			goto err_isr;
		rt.marker = gpio_to_desc(rt.marker_gpio);
	}

	rt.irq = gpio_to_irq(rt.stim_gpio);
	if (rt.irq <= 0) {
		pr_err(RT_NAME ": stim=%d of chip %s has no IRQ (%d)\n", stim, chip, rt.irq);
		ret = -ENODEV;
		goto err_marker;
	}
	rt.isr_in_thread = gpiod_cansleep(rt.isr);
	ret = request_threaded_irq(rt.irq, rt_hard, rt_thread, IRQF_TRIGGER_RISING | IRQF_ONESHOT,
				   RT_NAME, &rt);
	if (ret) {
		pr_err(RT_NAME ": cannot request IRQ %d of stim=%d on %s: %d\n", rt.irq, stim, chip,
		       ret);
		goto err_marker;
	}

	ret = misc_register(&rt_misc);
	if (ret) {
		pr_err(RT_NAME ": cannot register /dev/" RT_NAME ": %d\n", ret);
		goto err_irq;
	}

	pr_info(RT_NAME ": chip %s stim=%d (IRQ %d) isr_out=%d marker0=%d, /dev/" RT_NAME "\n",
		chip, stim, rt.irq, isr_out, marker0);
	if (rt.isr_in_thread)
		pr_info(RT_NAME ": isr_out's chip may sleep: ISR_OUT is driven from the thread\n");
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		pr_info(RT_NAME ": PREEMPT_RT: the primary handler is force-threaded (the RT model)\n");
	return 0;

err_irq:
	free_irq(rt.irq, &rt);
err_marker:
	if (rt.marker)
		gpio_free(rt.marker_gpio);
err_isr:
	gpio_free(rt.isr_gpio);
err_stim:
	gpio_free(rt.stim_gpio);
	return ret;
}

static void __exit rt_exit(void)
{
	/* No reader remains: an open /dev/rtrig holds this module. */
	misc_deregister(&rt_misc);
	free_irq(rt.irq, &rt); /* waits for both handlers */
	gpiod_set_value_cansleep(rt.isr, 0);
	if (rt.marker) {
		gpiod_set_value_cansleep(rt.marker, 0);
		gpio_free(rt.marker_gpio);
	}
	gpio_free(rt.isr_gpio);
	gpio_free(rt.stim_gpio);
}

module_init(rt_init);
module_exit(rt_exit);

MODULE_DESCRIPTION("rtrig target: GPIO interrupt answered on ISR_OUT, MARKER0 and /dev/rtrig");
MODULE_LICENSE("Dual BSD/GPL");
