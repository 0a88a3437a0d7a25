// SPDX-License-Identifier: BSD-2-Clause
/*
 * rtrig_vgpio: a virtual GPIO chip for the rtrig Linux VM test bed.
 *
 * A virtual machine has no pins, so this module plays the target's pins:
 * a gpio_chip labelled "rtrig-vgpio" with 9 lines and an irq_chip for the
 * input lines. The guest agent (rtrig-vm-agent) sets the inputs and reads
 * every level change of the outputs through the misc device
 * /dev/rtrig-vgpio. It is never needed on a board with real pins.
 *
 *   offset 0 stim0, 1 stim1, 2 load_en       inputs of the target
 *   offset 3 isr_out, 4 app_out, 5 heartbeat,
 *          6 marker0, 7 marker1, 8 marker2   outputs of the target
 *
 * write(): 2-byte records { u8 line (0-2), u8 value }. A level change whose
 *   edge matches the trigger of an unmasked line raises that line's IRQ in
 *   hard interrupt context (an IRQ_WORK_INIT_HARD irq_work calling
 *   generic_handle_domain_irq), on PREEMPT_RT as well. write() returns after
 *   the interrupt of each edge has been handled, so edges are never merged.
 * read(): 16-byte records struct { u64 t_ns; u32 line; u32 value; }, one per
 *   level change of lines 3-8 (t_ns: ktime_get_ns(), CLOCK_MONOTONIC), in
 *   order; blocks unless O_NONBLOCK (-EAGAIN); poll() supported. The ring
 *   holds 4096 records; on overflow the oldest are dropped and the next
 *   read() starts with { t_ns of the last dropped, 0xFFFFFFFF, count }.
 *
 * Usage (in the VM):  insmod rtrig_vgpio.ko
 * Line state lives under a raw spinlock: the chip's set() is called from
 * hard interrupt context (rtrig_linux's primary handler), also on RT.
 */

#include <linux/bits.h>
#include <linux/fs.h>
#include <linux/gpio/driver.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irq_work.h>
#include <linux/irqdomain.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#define VG_NAME "rtrig-vgpio"
#define VG_NGPIO 9
#define VG_NIN 3 /* offsets 0..2 are inputs with an IRQ each */
#define VG_RING 4096 /* power of two */
#define VG_LOST_LINE 0xFFFFFFFFu
#define VG_BATCH 32 /* records copied to user space per lock hold */

struct vg_rec {
	__u64 t_ns;
	__u32 line;
	__u32 value;
};

static struct {
	struct gpio_chip gc;
	struct irq_domain *domain;
	struct fwnode_handle *fwnode;

	raw_spinlock_t lock; /* everything below */
	unsigned long level; /* bit per offset */
	unsigned long masked; /* bit per input offset: IRQ masked */
	unsigned int type[VG_NIN]; /* IRQ_TYPE_EDGE_* per input offset */
	unsigned long pending; /* input offsets whose IRQ is to be raised */
	struct vg_rec ring[VG_RING];
	unsigned int head, tail; /* free-running; head - tail = records */
	u32 lost;
	u64 lost_t_ns;

	struct irq_work raise_work; /* hard: raises pending IRQs */
	struct irq_work wake_work; /* wakes readers where waking may sleep */
	wait_queue_head_t readq;
	struct mutex write_lock; /* one writer at a time: edges in order */
} vg;

static bool vg_is_input(unsigned int offset)
{
	return offset < VG_NIN;
}

/* ------------------------------------------------------------ event ring */

static bool vg_readable_locked(void)
{
	return vg.head != vg.tail || vg.lost;
}

static bool vg_readable(void)
{
	unsigned long flags;
	bool r;

	raw_spin_lock_irqsave(&vg.lock, flags);
	r = vg_readable_locked();
	raw_spin_unlock_irqrestore(&vg.lock, flags);
	return r;
}

/* Called with vg.lock held. Drops the oldest record when the ring is full. */
static void vg_push_locked(unsigned int line, unsigned int value)
{
	struct vg_rec *r;

	if (vg.head - vg.tail == VG_RING) {
		vg.lost_t_ns = vg.ring[vg.tail % VG_RING].t_ns;
		vg.lost++;
		vg.tail++;
	}
	r = &vg.ring[vg.head % VG_RING];
	r->t_ns = ktime_get_ns();
	r->line = line;
	r->value = value;
	vg.head++;
}

/* Wakes readers from any context. The wait queue's lock sleeps on RT. */
static void vg_wake(void)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		irq_work_queue(&vg.wake_work);
	else
		wake_up_interruptible(&vg.readq);
}

static void vg_wake_work(struct irq_work *work)
{
	wake_up_interruptible(&vg.readq);
}

/* ------------------------------------------------------------ gpio_chip */

static int vg_get(struct gpio_chip *gc, unsigned int offset)
{
	unsigned long flags;
	int v;

	raw_spin_lock_irqsave(&vg.lock, flags);
	v = !!(vg.level & BIT(offset));
	raw_spin_unlock_irqrestore(&vg.lock, flags);
	return v;
}

/* Sets an output's level; records a change. Callable from hard IRQ. */
static void vg_set_output(unsigned int offset, int value)
{
	unsigned long flags;
	bool changed;

	raw_spin_lock_irqsave(&vg.lock, flags);
	changed = !!(vg.level & BIT(offset)) != !!value;
	if (changed) {
		vg.level ^= BIT(offset);
		vg_push_locked(offset, !!value);
	}
	raw_spin_unlock_irqrestore(&vg.lock, flags);
	if (changed)
		vg_wake();
}

static void vg_set(struct gpio_chip *gc, unsigned int offset, int value)
{
	if (!vg_is_input(offset))
		vg_set_output(offset, value);
}

static int vg_get_direction(struct gpio_chip *gc, unsigned int offset)
{
	return vg_is_input(offset) ? GPIO_LINE_DIRECTION_IN : GPIO_LINE_DIRECTION_OUT;
}

static int vg_direction_input(struct gpio_chip *gc, unsigned int offset)
{
	return vg_is_input(offset) ? 0 : -EPERM;
}

static int vg_direction_output(struct gpio_chip *gc, unsigned int offset, int value)
{
	if (vg_is_input(offset))
		return -EPERM;
	vg_set_output(offset, value);
	return 0;
}

static int vg_to_irq(struct gpio_chip *gc, unsigned int offset)
{
	unsigned int irq;

	if (!vg_is_input(offset))
		return -ENXIO;
	irq = irq_create_mapping(vg.domain, offset);
	return irq ? irq : -ENXIO;
}

/* ------------------------------------------------------------ irq_chip */

static void vg_irq_mask(struct irq_data *d)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&vg.lock, flags);
	vg.masked |= BIT(irqd_to_hwirq(d));
	raw_spin_unlock_irqrestore(&vg.lock, flags);
}

static void vg_irq_unmask(struct irq_data *d)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&vg.lock, flags);
	vg.masked &= ~BIT(irqd_to_hwirq(d));
	raw_spin_unlock_irqrestore(&vg.lock, flags);
}

static int vg_irq_set_type(struct irq_data *d, unsigned int type)
{
	unsigned long flags;

	type &= IRQ_TYPE_SENSE_MASK;
	if (type != IRQ_TYPE_EDGE_RISING && type != IRQ_TYPE_EDGE_FALLING &&
	    type != IRQ_TYPE_EDGE_BOTH)
		return -EINVAL;
	raw_spin_lock_irqsave(&vg.lock, flags);
	vg.type[irqd_to_hwirq(d)] = type;
	raw_spin_unlock_irqrestore(&vg.lock, flags);
	return 0;
}

/* Marks the line as used for an IRQ in gpiolib and holds this module. */
static int vg_irq_reqres(struct irq_data *d)
{
	return gpiochip_reqres_irq(&vg.gc, irqd_to_hwirq(d));
}

static void vg_irq_relres(struct irq_data *d)
{
	gpiochip_relres_irq(&vg.gc, irqd_to_hwirq(d));
}

static const struct irq_chip vg_irq_chip = {
	.name = VG_NAME,
	.irq_mask = vg_irq_mask,
	.irq_unmask = vg_irq_unmask,
	.irq_set_type = vg_irq_set_type,
	.irq_request_resources = vg_irq_reqres,
	.irq_release_resources = vg_irq_relres,
	.flags = IRQCHIP_IMMUTABLE | IRQCHIP_SKIP_SET_WAKE,
};

static int vg_irq_map(struct irq_domain *d, unsigned int virq, irq_hw_number_t hw)
{
	if (hw >= VG_NIN)
		return -ENXIO;
	irq_set_chip_data(virq, &vg);
	irq_set_chip_and_handler(virq, &vg_irq_chip, handle_simple_irq);
	irq_set_noprobe(virq);
	return 0;
}

static const struct irq_domain_ops vg_domain_ops = {
	.map = vg_irq_map,
};

/* Hard interrupt context (IRQ_WORK_HARD_IRQ), also on PREEMPT_RT. */
static void vg_raise_work(struct irq_work *work)
{
	unsigned long flags, pending;
	unsigned int hw;

	raw_spin_lock_irqsave(&vg.lock, flags);
	pending = vg.pending;
	vg.pending = 0;
	raw_spin_unlock_irqrestore(&vg.lock, flags);
	for_each_set_bit(hw, &pending, VG_NIN)
		generic_handle_domain_irq(vg.domain, hw);
}

/* ------------------------------------------------------------ misc device */

static ssize_t vg_write(struct file *file, const char __user *buf, size_t count, loff_t *ppos)
{
	u8 rec[2];
	size_t done;
	unsigned long flags;
	bool raise;
	ssize_t ret = 0;

	if (count % 2)
		return -EINVAL;
	if (mutex_lock_interruptible(&vg.write_lock))
		return -ERESTARTSYS;
	for (done = 0; done < count; done += 2) {
		unsigned int line, value, type;

		if (copy_from_user(rec, buf + done, 2)) {
			ret = -EFAULT;
			break;
		}
		line = rec[0];
		value = !!rec[1];
		if (!vg_is_input(line)) {
			ret = -EINVAL;
			break;
		}
		raw_spin_lock_irqsave(&vg.lock, flags);
		raise = false;
		if (!!(vg.level & BIT(line)) != value) {
			vg.level ^= BIT(line);
			type = vg.type[line];
			raise = !(vg.masked & BIT(line)) &&
				(value ? (type & IRQ_TYPE_EDGE_RISING) : (type & IRQ_TYPE_EDGE_FALLING));
			if (raise)
				vg.pending |= BIT(line);
		}
		raw_spin_unlock_irqrestore(&vg.lock, flags);
		if (raise) {
			irq_work_queue(&vg.raise_work);
			irq_work_sync(&vg.raise_work); /* one interrupt per edge */
		}
	}
	mutex_unlock(&vg.write_lock);
	/* Records already applied count, as for any partial write. */
	return done ? (ssize_t)done : ret;
}

static ssize_t vg_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct vg_rec batch[VG_BATCH];
	size_t want = count / sizeof(struct vg_rec), done = 0;
	unsigned long flags;
	int ret;

	if (!want)
		return -EINVAL;
	for (;;) {
		unsigned int n = 0;

		raw_spin_lock_irqsave(&vg.lock, flags);
		if (vg.lost && done + n < want) {
			batch[n].t_ns = vg.lost_t_ns;
			batch[n].line = VG_LOST_LINE;
			batch[n].value = vg.lost;
			vg.lost = 0;
			n++;
		}
		while (vg.head != vg.tail && n < VG_BATCH && done + n < want)
			batch[n++] = vg.ring[vg.tail++ % VG_RING];
		raw_spin_unlock_irqrestore(&vg.lock, flags);

		if (n) {
			if (copy_to_user(buf + done * sizeof(struct vg_rec), batch,
					 n * sizeof(struct vg_rec))) {
				/* never silent: what could not be delivered counts as lost */
				unsigned int i;

				raw_spin_lock_irqsave(&vg.lock, flags);
				for (i = 0; i < n; i++)
					vg.lost += batch[i].line == VG_LOST_LINE ? batch[i].value : 1;
				vg.lost_t_ns = max(vg.lost_t_ns, batch[n - 1].t_ns);
				raw_spin_unlock_irqrestore(&vg.lock, flags);
				return done ? (ssize_t)(done * sizeof(struct vg_rec)) : -EFAULT;
			}
			done += n;
			if (done < want)
				continue;
		}
		if (done)
			return done * sizeof(struct vg_rec);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(vg.readq, vg_readable());
		if (ret)
			return ret;
	}
}

static __poll_t vg_poll(struct file *file, poll_table *wait)
{
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(file, &vg.readq, wait);
	if (vg_readable())
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

static const struct file_operations vg_fops = {
	.owner = THIS_MODULE,
	.read = vg_read,
	.write = vg_write,
	.poll = vg_poll,
	.llseek = noop_llseek,
};

static struct miscdevice vg_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = VG_NAME,
	.fops = &vg_fops,
	.mode = 0600,
};

/* ------------------------------------------------------------ module */

static int __init vg_init(void)
{
	int ret;

	raw_spin_lock_init(&vg.lock);
	vg.masked = GENMASK(VG_NIN - 1, 0);
	init_waitqueue_head(&vg.readq);
	mutex_init(&vg.write_lock);
	vg.raise_work = IRQ_WORK_INIT_HARD(vg_raise_work);
	vg.wake_work = IRQ_WORK_INIT(vg_wake_work);

	vg.fwnode = irq_domain_alloc_named_fwnode(VG_NAME);
	if (!vg.fwnode)
		return -ENOMEM;
	vg.domain = irq_domain_create_linear(vg.fwnode, VG_NIN, &vg_domain_ops, &vg);
	if (!vg.domain) {
		ret = -ENOMEM;
		goto err_fwnode;
	}

	vg.gc.label = VG_NAME;
	vg.gc.owner = THIS_MODULE; /* a requested line holds the module */
	vg.gc.base = -1;
	vg.gc.ngpio = VG_NGPIO;
	vg.gc.can_sleep = false;
	vg.gc.get = vg_get;
	vg.gc.set = vg_set;
	vg.gc.get_direction = vg_get_direction;
	vg.gc.direction_input = vg_direction_input;
	vg.gc.direction_output = vg_direction_output;
	vg.gc.to_irq = vg_to_irq;
	ret = gpiochip_add_data(&vg.gc, &vg);
	if (ret) {
		pr_err(VG_NAME ": gpiochip_add_data failed (%d)\n", ret);
		goto err_domain;
	}

	ret = misc_register(&vg_misc);
	if (ret) {
		pr_err(VG_NAME ": misc_register /dev/" VG_NAME " failed (%d)\n", ret);
		goto err_chip;
	}
	pr_info(VG_NAME ": %d lines, /dev/" VG_NAME "\n", VG_NGPIO);
	return 0;

err_chip:
	gpiochip_remove(&vg.gc);
err_domain:
	irq_domain_remove(vg.domain);
err_fwnode:
	irq_domain_free_fwnode(vg.fwnode);
	return ret;
}

static void __exit vg_exit(void)
{
	unsigned int hw, virq;

	/* No open file and no requested line or IRQ remain: each holds this module. */
	misc_deregister(&vg_misc);
	gpiochip_remove(&vg.gc);
	irq_work_sync(&vg.raise_work);
	irq_work_sync(&vg.wake_work);
	for (hw = 0; hw < VG_NIN; hw++) {
		virq = irq_find_mapping(vg.domain, hw);
		if (virq)
			irq_dispose_mapping(virq);
	}
	irq_domain_remove(vg.domain);
	irq_domain_free_fwnode(vg.fwnode);
}

module_init(vg_init);
module_exit(vg_exit);

MODULE_DESCRIPTION("rtrig virtual GPIO chip with interrupts for the VM test bed");
MODULE_LICENSE("Dual BSD/GPL");
